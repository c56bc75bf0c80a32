package bench

import (
	"time"

	"github.com/seckill/seckill"
)

// Report is everything one `seckill-lab bench` run measured. It is written as
// JSON (--json), rendered as HTML (--html) and printed as a table.
type Report struct {
	StartedAt time.Time `json:"started_at"`
	Machine   string    `json:"machine"` // e.g. "linux/amd64, 2 CPUs"
	Config    Settings  `json:"config"`
	// Steps holds one run per load step (--steps), or a single run.
	Steps []Step `json:"steps"`
	// Baselines measured in the same run on the same machine (--baselines).
	Baselines *Baselines `json:"baselines,omitempty"`
	// Ratios against the baselines, keyed by Ratio.Key (see Ratios; absent
	// without baselines).
	Ratios map[string]float64 `json:"ratios"`
	// RatiosSpread (with --repeat N > 1): per ratio, (max − min) / median
	// over the rounds.
	RatiosSpread map[string]float64 `json:"ratios_spread,omitempty"`
	// Repeats are the rounds of an interleaved run (--repeat N > 1): each
	// round's baselines, ratios and invariants. Steps holds every round's
	// steps (Step.Repeat says which); Baselines holds the medians.
	Repeats []Repeat `json:"repeats,omitempty"`
	// RedisAOF (--redis-aof): the admission script against a private
	// redis-server per persistence setting, medians over the rounds.
	RedisAOF map[string]AOFResult `json:"redis_aof,omitempty"`
	// Reserved (--registrations N): a reserved sale's registrations and
	// its burst, side by side.
	Reserved *Reserved `json:"reserved,omitempty"`
	// Draw (--draw N): a draw sale's registrations, draw and front door,
	// beside the first-come burst of the run.
	Draw *Draw `json:"draw,omitempty"`
	// Items is the sale of several items (--items N).
	Items *ItemsSale `json:"items,omitempty"`
	// Captcha (--captchas N): what drawing the human check costs the API.
	Captcha *CaptchaCost `json:"captcha,omitempty"`
	// CPUPinning says whether the stack ran pinned (--pin) and how.
	CPUPinning CPUPinning `json:"cpu_pinning"`
	// Temporal is the cost of an order in Temporal per path (absent when
	// the bench has no Temporal address or --cost-sample is 0).
	Temporal     *TemporalCost `json:"temporal,omitempty"`
	InvariantsOK bool          `json:"invariants_ok"`
	Problems     []string      `json:"problems"`
}

// Settings echoes the configuration of the run.
type Settings struct {
	BaseURL     string  `json:"base_url"`
	Users       int     `json:"users"`
	PerUser     int     `json:"requests_per_user"`
	Concurrency int     `json:"concurrency"`
	Rate        int     `json:"rate"` // open loop, requests/s; 0 = closed loop
	Steps       []int   `json:"steps,omitempty"`
	Stock       int     `json:"stock"`
	Quantity    int     `json:"quantity"`
	Limit       int     `json:"per_user_limit"`
	PayRatio    float64 `json:"pay_ratio"`
	PayTimeout  string  `json:"pay_timeout"`
	// PayAfterCreation: payments waited for the last order (see Config).
	PayAfterCreation bool `json:"pay_after_creation,omitempty"`
	// Registrations: the reserved sale's (--registrations).
	Registrations int `json:"registrations,omitempty"`
	// Draw: the draw sale's units (--draw).
	Draw int `json:"draw,omitempty"`
	// Items: the sale of several items' (--items).
	Items int `json:"items,omitempty"`
}

// Step is one load level: a fresh session sold out under that load.
type Step struct {
	// Repeat is the round of a --repeat run this step belongs to (absent
	// in a single-round run).
	Repeat      int `json:"repeat,omitempty"`
	Concurrency int `json:"concurrency"`
	Rate        int `json:"rate,omitempty"`
	// Sale is "reserved" for the reserved sale's step (Report.Reserved),
	// "draw" for the draw sale's (Report.Draw), absent for a first-come
	// sale.
	Sale      string `json:"sale,omitempty"`
	SessionID int64  `json:"session_id"`
	Funnel    Funnel `json:"funnel"`
	// DurationSeconds is the burst's wall time; Throughput its requests/s.
	DurationSeconds float64 `json:"duration_seconds"`
	Throughput      float64 `json:"throughput"`
	// SoldOutThroughput is requests/s of a second burst, four times the
	// first's requests, against the sold-out session once its orders are
	// created (the fast path); with --keys, of its half sent without keys.
	SoldOutThroughput float64 `json:"soldout_throughput"`
	// FiberThroughput is requests/s of the bare Fiber handler sent the same
	// burst just before it (with --baselines): what the burst and its
	// losers are divided by (admission_vs_fiber, losers_vs_fiber).
	FiberThroughput float64 `json:"fiber_throughput,omitempty"`
	// SoldOutKeyedThroughput is requests/s of the sold-out burst's half
	// sent with a fresh Idempotency-Key on every request (--keys), in
	// slices alternating with the unkeyed half; SoldOutKeyedFromMemory how
	// many of its answers came from memory.
	SoldOutKeyedThroughput float64 `json:"soldout_keyed_throughput,omitempty"`
	SoldOutKeyedFromMemory int     `json:"soldout_keyed_from_memory,omitempty"`
	// SoldOutFiberThroughput is requests/s of the bare Fiber handler (a
	// process of its own) in slices interleaved with the sold-out burst's
	// (with --baselines): the ceiling measured under the same load as the
	// sold-out answers (whatever else runs on the machine), which the
	// unkeyed sold-out ratio divides by.
	SoldOutFiberThroughput float64 `json:"soldout_fiber_throughput,omitempty"`
	// SoldOutFiberKeyedThroughput is the same handler sent the keyed
	// half's requests (a fresh Idempotency-Key on each, with --keys), in
	// slices of their own: what the keyed sold-out ratio divides by.
	SoldOutFiberKeyedThroughput float64 `json:"soldout_fiber_keyed_throughput,omitempty"`
	// Losers are the burst's requests sent from its sell-out on, as the
	// burst sent them (with keys under --keys).
	Losers *Losers `json:"losers_after_sell_out,omitempty"`
	// Latency per outcome (accepted, soldout_memory, soldout_redis, limit,
	// rate_limited, error), milliseconds.
	Latency map[string]Percentiles `json:"latency_ms"`
	// TimeToSellOutSeconds: from the first request to the last unit won.
	TimeToSellOutSeconds float64 `json:"time_to_sell_out_seconds"`
	// TimeToAllWaitPaySeconds: from the first request until every accepted
	// order was WAIT_PAY; OrdersPerSecond = accepted / that.
	TimeToAllWaitPaySeconds float64 `json:"time_to_all_wait_pay_seconds"`
	OrdersPerSecond         float64 `json:"orders_per_second"`
	// CreationPerSecond is the order tier's own pace: orders created per
	// second from the first order's row to the last one's, (n − 1) / that
	// span. OrdersPerSecond also counts the burst and the starter's hold
	// for it (the front door's time, not the tier's); the no-op baseline
	// is timed the same way, first completion to last
	// (orders_vs_temporal_noop).
	CreationPerSecond float64 `json:"creation_per_second,omitempty"`
	// CreatedDuringBurst counts the orders whose row was created before
	// the burst's last answer: starts the API's starter sent while the
	// front door was busy (it holds them until the burst is answered, see
	// starter.Config.Busy), which took CPU from the shoppers waiting.
	CreatedDuringBurst int `json:"created_during_burst"`
	// PaidDuringCreation counts the payments applied (the order PAID)
	// before the last order was created, when shoppers pay as their orders
	// show WAIT_PAY: how much of the payments' work fell within the span
	// CreationPerSecond is timed over.
	PaidDuringCreation int `json:"paid_during_creation,omitempty"`
	// PaymentsPerSecond, with --pay-after-creation: the paid orders over
	// the time from the first payment sent to the last order PAID (each a
	// signal and a workflow task through the task queue).
	PaymentsPerSecond float64 `json:"payments_per_second,omitempty"`
	// StartLatency is the API's workflow starts during the step, from its
	// own histogram (absent when the API serves none).
	StartLatency *StartLatency `json:"workflow_start,omitempty"`
	// TemporalCPU is what the Temporal server spent per order in each
	// phase (absent unless the server runs on this machine).
	TemporalCPU *TemporalCPU `json:"temporal_cpu,omitempty"`
	// Closing is how fast the unpaid orders closed once their pay timers
	// fired (absent when the bench did not wait for them: --pay-timeout 0).
	Closing *Closing `json:"closing,omitempty"`
	// Timeline is the burst in 100 ms buckets, for the latency-over-time chart.
	Timeline []Bucket `json:"timeline"`
	// Reconcile is the session's reconcile report once the step settled.
	Reconcile    *seckill.Report `json:"reconcile,omitempty"`
	InvariantsOK bool            `json:"invariants_ok"`
}

// StartLatency is how long the API's starter waited for StartWorkflow
// during a step: the Temporal server's answer time as the API saw it.
type StartLatency struct {
	Starts int     `json:"starts"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
}

// TemporalCPU is the Temporal server process's CPU time per order in each
// phase of a step, in milliseconds, and its part of the machine's busy
// CPU during the phase: beside the no-op workflow's (Baselines), it tells
// whether an order makes the server work more than a no-op does, and how
// much of a rate below the no-op's is CPU the server did not get.
type TemporalCPU struct {
	// Create: from the burst to the last order's row, per order created,
	// when nothing else ran meanwhile (--pay-after-creation, or nothing
	// paid); CreateAndPay instead when shoppers paid while the orders were
	// being created (the payments' cost shared out over the orders).
	CreateMs       float64 `json:"create_ms_per_order,omitempty"`
	CreateAndPayMs float64 `json:"create_and_pay_ms_per_order,omitempty"`
	CreateShare    float64 `json:"create_share"`
	// Pay: with --pay-after-creation, from the first payment to the last
	// order PAID, per paid order.
	PayMs    float64 `json:"pay_ms_per_order,omitempty"`
	PayShare float64 `json:"pay_share,omitempty"`
	// Close: from the first pay deadline to the last close, per order
	// closed by its timer.
	CloseMs    float64 `json:"close_ms_per_order,omitempty"`
	CloseShare float64 `json:"close_share,omitempty"`
}

// Closing measures the pay timers of a step's unpaid orders, which fire
// together when the orders were created together: the orders closed (stock
// back in both stores) from the first pay deadline to the last close, and
// how long the last close came after the last deadline. PerSecond is
// Orders / (last close − first deadline): the closing capacity when the
// closes lag the deadlines, the pace of the deadlines (the creation rate)
// when they keep up (then AfterLastDeadlineSeconds stays near zero). The
// lag of each order (its close, read from its row's updated_at, minus its
// pay deadline) tells the two apart: it stays flat while the closes keep
// up and grows once they fall behind.
type Closing struct {
	Orders                   int     `json:"orders"`
	AfterLastDeadlineSeconds float64 `json:"after_last_deadline_seconds"`
	PerSecond                float64 `json:"per_second"`
	LagP50Seconds            float64 `json:"lag_p50_seconds"`
	LagP99Seconds            float64 `json:"lag_p99_seconds"`
}

// Funnel counts where each request ended.
type Funnel struct {
	Requests    int `json:"requests"`
	RateLimited int `json:"rate_limited"`
	Window      int `json:"window"`
	// NotEligible: refused by a reserved sale (the shopper had not
	// registered) or a draw (no right to buy): 403 NOT_ELIGIBLE.
	NotEligible   int `json:"not_eligible,omitempty"`
	SoldOutMemory int `json:"soldout_fast_path"`
	SoldOutRedis  int `json:"soldout_redis"`
	LimitExceeded int `json:"limit_exceeded"`
	OtherErrors   int `json:"other_errors"`
	Accepted      int `json:"accepted"`
	OrdersCreated int `json:"orders_created"` // reached WAIT_PAY
	Paid          int `json:"paid"`
	// Cancelled unpaid orders (by their shoppers, for the cancel path's
	// cost); they are counted in Closed too.
	Cancelled int `json:"cancelled"`
	Closed    int `json:"closed"`
	// Refunded paid orders (by the bench as an operator, for the refunded
	// path's cost); they are counted in Paid too.
	Refunded int `json:"refunded"`
}

// Percentiles of a latency distribution, milliseconds.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Bucket is 100 ms of the burst.
type Bucket struct {
	AtSeconds float64 `json:"at_s"`
	Requests  int     `json:"requests"`
	Accepted  int     `json:"accepted"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
}

// Baselines are the physical limits measured beside the system.
type Baselines struct {
	// FiberRPS: a bare Fiber handler answering the same JSON, same load.
	FiberRPS float64 `json:"fiber_rps"`
	// LuaPerSecond: the admission script called directly through go-redis
	// at the same concurrency.
	LuaPerSecond float64 `json:"lua_per_second"`
	// TemporalNoopPerSecond: no-op workflows with one local activity,
	// started and completed per second on the same Temporal server, first
	// completion to last; with the steps run, the mean of a run before
	// them and one after (TemporalNoopBefore, TemporalNoopAfter): the
	// server slows as it fills with the run's workflows, and the mean is
	// its pace while the steps ran.
	TemporalNoopPerSecond float64 `json:"temporal_noop_per_second"`
	TemporalNoopBefore    float64 `json:"temporal_noop_before_per_second,omitempty"`
	TemporalNoopAfter     float64 `json:"temporal_noop_after_per_second,omitempty"`
	// TemporalNoopCPUMs is the Temporal server's CPU time per no-op
	// workflow, and TemporalNoopShare its part of the machine's busy CPU
	// meanwhile (absent unless the server runs on this machine).
	TemporalNoopCPUMs float64 `json:"temporal_noop_cpu_ms,omitempty"`
	TemporalNoopShare float64 `json:"temporal_noop_share,omitempty"`
	// AdmissionOnly: the same burst through the same API code with the
	// order tier switched off (absent when the bench has no MySQL DSN).
	AdmissionOnly *AdmissionOnly `json:"admission_only,omitempty"`
	// AdmissionOnlyRisk is the same with the risk check on (--risk).
	AdmissionOnlyRisk *AdmissionOnly `json:"admission_only_risk,omitempty"`
	// AdmissionOnlyTraced and AdmissionOnlySampled are the same traced,
	// every request sampled and 1 % of them (--tracing).
	AdmissionOnlyTraced  *AdmissionOnly `json:"admission_only_traced,omitempty"`
	AdmissionOnlySampled *AdmissionOnly `json:"admission_only_sampled,omitempty"`
}

// AdmissionOnly is the admission-only baseline: the last step's burst (same
// shoppers, requests and load) against an API built in the bench process
// with api.New on the stack's MySQL and Redis (a scratch key prefix), whose
// order starts do nothing. What the real burst loses against it is what
// the order tier (the starter, Temporal, the worker) costs the front door.
//
// With --keys its burst is keyed as the step's is, and the same burst
// without keys runs beside it in the same process (Unkeyed; two bursts of
// each, in pairOrder): what the key costs, the order tier left out.
type AdmissionOnly struct {
	RequestsPerSecond float64 `json:"requests_per_second"`
	AcceptedP50       float64 `json:"accepted_p50_ms"`
	AcceptedP99       float64 `json:"accepted_p99_ms"`
	// RefusedP50 is the refusals' p50; Losers the requests sent from the
	// sell-out on.
	RefusedP50 float64        `json:"refused_p50_ms,omitempty"`
	Losers     *Losers        `json:"losers_after_sell_out,omitempty"`
	CPU        *BurstCPU      `json:"cpu_us_per_request,omitempty"`
	Unkeyed    *AdmissionOnly `json:"unkeyed,omitempty"`
}

// BurstCPU is the CPU time the bursts cost per request, in microseconds,
// read from /proc around each burst: the admission-only API's process,
// Redis's (when it runs on this machine, one server), the load
// generator's, and the machine's busy time in all. On two shared cores a
// burst's requests/s is bounded by their sum, so the keyed and unkeyed
// columns side by side say which process a key costs, and how much.
type BurstCPU struct {
	API     float64 `json:"api"`
	Redis   float64 `json:"redis,omitempty"`
	Bench   float64 `json:"load_generator"`
	Machine float64 `json:"machine"`
}
