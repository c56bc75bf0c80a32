// Package bench is `seckill bench`: a black-box load generator for a
// running stack, and the report of what it measured. It sells a fresh
// session at each load step (many shoppers with their own JWTs, closed or
// open loop), draws the funnel from the layer that answered each request
// (X-Seckill-Layer), follows every winner to WAIT_PAY, pays part of them
// through signed webhooks, lets the rest time out, checks the invariants,
// and measures the physical limits beside it in the same run (a bare Fiber
// handler, the admission script alone, a no-op Temporal workflow) so that
// the figures are ratios, which survive a noisy shared machine.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/client"
)

// Config describes a bench run.
type Config struct {
	BaseURL       string
	AdminToken    string
	JWTSecret     []byte
	WebhookSecret []byte
	Users         int
	PerUser       int   // requests per shopper
	Concurrency   int   // closed loop: requests in flight
	Rate          int   // open loop: requests per second (0 = closed loop)
	Steps         []int // load steps (concurrency, or rate in open loop); empty = one run
	Stock         int
	Quantity      int
	Limit         int // per-user limit of the bench sessions
	PayRatio      float64
	// PayTimeout is the stack's SECKILL_PAY_TIMEOUT: the bench waits that
	// long (plus Settle) for unpaid orders to close; 0 skips the wait.
	PayTimeout time.Duration
	// PayAfterCreation holds the payments until every order reached
	// WAIT_PAY, then sends them all: the creation, the payments and the
	// closes each run alone, and each rate compares with the no-op
	// workflow's (the pay timeout must outlast the creation, or the first
	// orders close before their payment). Off, a shopper pays as soon as
	// the order shows WAIT_PAY.
	PayAfterCreation bool
	Settle           time.Duration
	Baselines        *BaselineConfig
	Progress         io.Writer
	// TemporalAddr and TemporalNamespace: where the bench reads the
	// histories of CostSample orders of each path (paid, timed out,
	// cancelled: that many unpaid orders are cancelled by their shoppers)
	// to count what an order costs in Temporal. No address or a sample of
	// 0 skips it.
	TemporalAddr      string
	TemporalNamespace string
	CostSample        int
	// Repeat runs the baselines and the subject's steps that many times,
	// interleaved (baselines, steps, baselines, steps, …); the ratios are
	// the medians over the rounds, with their spread. 0 means 1.
	Repeat int
	// RedisAOF lists Redis persistence settings ("no", "everysec",
	// "always"): each round also runs the admission script against a
	// private redis-server per setting, one after the other.
	RedisAOF []string
	// Pin, when set, pins the stack's processes for the whole run.
	Pin *PinPlan
	// Warmup runs one unrecorded step first (at the last load level, every
	// winner paid, so nothing waits for the pay timeout): a fresh API's
	// first burst pays for cold connections and caches and would widen
	// the spread, and the admission-only baseline it is compared with
	// fills its Redis pool before serving. At most warmupStock units are
	// sold: the burst warms the API, not the order tier. Its invariants
	// are still checked.
	Warmup bool
	// Captchas, when positive, draws that many captchas at the end (one
	// per shopper) and reports what the human check costs (Report.Captcha).
	Captchas int
	// Risk runs the admission-only baseline a second time with the risk
	// check on, against a risk service in the bench process that allows
	// everyone (Baselines.AdmissionOnlyRisk, risk_vs_admission_only).
	Risk bool
	// Keys sends every purchase with a fresh Idempotency-Key (a UUIDv7,
	// as the shop page does) and measures the sold-out burst both with and
	// without keys (Step.SoldOutKeyedThroughput). Off, no request has one.
	Keys bool
}

// warmupStock caps the units the warm-up step sells: enough winners to
// take every connection of the API's pools, few enough that a 5,000-unit
// run does not wait for a second 5,000-order creation.
const warmupStock = 500

// Outcome codes: how one admission request ended, the keys of Step.Latency
// and of Outcomes.
const (
	OutAccepted      = "accepted"
	OutSoldOutMemory = "soldout_memory"
	OutSoldOutRedis  = "soldout_redis"
	OutLimit         = "limit"
	OutRateLimited   = "rate_limited"
	OutWindow        = "window"
	OutError         = "error"
)

// Outcome names an outcome code for people.
type Outcome struct{ Code, Name string }

// Outcomes are every outcome, in the order a request meets them from the
// happy path outwards; the reports list them so.
var Outcomes = []Outcome{
	{OutAccepted, "Accepted"},
	{OutSoldOutMemory, "Sold out (fast path)"},
	{OutSoldOutRedis, "Sold out (Redis)"},
	{OutLimit, "Per-user limit exceeded"},
	{OutRateLimited, "Rate limited"},
	{OutWindow, "Outside the sale window"},
	{OutError, "Other errors"},
}

// OutcomeName is the name of an outcome code; the code itself for one this
// build does not know (a report written by another version).
func OutcomeName(code string) string {
	for _, o := range Outcomes {
		if o.Code == code {
			return o.Name
		}
	}
	return code
}

// priceCents is the price of the bench sessions' unit: payments must match it.
const priceCents = 100

// result is one request's fate.
type result struct {
	at      time.Duration // since the burst began
	latency time.Duration
	outcome string
	orderNo string
	shopper int
}

// shopper is one simulated user: the Authorization header of the load
// loop's requests, and a typed client acting as that user for the rest.
type shopper struct {
	user  int64
	auth  string
	index int
	api   *client.Client
}

// Run runs the bench and returns its report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Settle <= 0 {
		cfg.Settle = time.Minute
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Quantity <= 0 {
		cfg.Quantity = 1
	}
	if cfg.Limit < cfg.Quantity {
		cfg.Limit = cfg.Quantity
	}
	rep := &Report{
		StartedAt: time.Now().UTC(),
		Machine:   fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()),
		Config: Settings{BaseURL: cfg.BaseURL, Users: cfg.Users, PerUser: cfg.PerUser, Concurrency: cfg.Concurrency,
			Rate: cfg.Rate, Steps: cfg.Steps, Stock: cfg.Stock, Quantity: cfg.Quantity, Limit: cfg.Limit, PayRatio: cfg.PayRatio,
			PayTimeout: cfg.PayTimeout.String(), PayAfterCreation: cfg.PayAfterCreation},
		Ratios: map[string]float64{}, Problems: []string{}, InvariantsOK: true,
	}
	steps := cfg.Steps
	if len(steps) == 0 {
		steps = []int{cfg.Concurrency}
		if cfg.Rate > 0 {
			steps = []int{cfg.Rate}
		}
	}
	admin := client.New(cfg.BaseURL)
	admin.AdminToken, admin.WebhookSecret, admin.PollInterval = cfg.AdminToken, cfg.WebhookSecret, pollEvery
	shoppers, err := makeShoppers(cfg, admin)
	if err != nil {
		return nil, err
	}
	rep.CPUPinning = CPUPinning{Mode: "off"}
	if p := cfg.Pin; p != nil {
		restore, err := p.apply()
		if err != nil {
			return nil, fmt.Errorf("pin: %w", err)
		}
		defer restore()
		rep.CPUPinning = CPUPinning{Mode: "pinned", FrontCPU: p.FrontCPU, BackCPU: p.BackCPU, Front: p.Front, Back: p.Back}
		fmt.Fprintf(cfg.Progress, "pinned: %v on CPU %s, %v on CPU %s\n", p.Front, p.FrontCPU, p.Back, p.BackCPU)
	}
	conc := steps[len(steps)-1]
	if cfg.Rate > 0 {
		conc = 256
	}
	var aof []*privateRedis
	defer func() {
		for _, r := range aof {
			r.stop()
		}
	}()
	for _, m := range cfg.RedisAOF {
		r, err := startPrivateRedis(ctx, m, cfg.Pin.frontPrefix())
		if err != nil {
			return nil, err
		}
		aof = append(aof, r)
	}
	temporalAddr := cfg.TemporalAddr
	if temporalAddr == "" && cfg.Baselines != nil {
		temporalAddr = cfg.Baselines.TemporalAddr
	}
	cpu := meterServer(temporalAddr)
	cs, err := dialCosts(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("temporal cost: %w", err)
	}
	defer cs.close()
	c := newLoadClient(cfg.BaseURL)
	if cfg.Warmup {
		wcfg := cfg
		wcfg.PayRatio, wcfg.PayTimeout, wcfg.Stock = 1, 0, min(cfg.Stock, warmupStock)
		r := &stepRunner{cfg: wcfg, c: c, api: admin, shoppers: shoppers, rep: rep, label: "warm-up "}
		fmt.Fprintln(cfg.Progress, "warm-up step (not recorded)")
		st, err := r.run(ctx, steps[len(steps)-1])
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if !st.InvariantsOK {
			rep.InvariantsOK = false
		}
	}
	rounds := max(1, cfg.Repeat)
	var (
		ratioRounds []map[string]float64
		baselines   []*Baselines
		aofRounds   []map[string]AOFRun
	)
	for n := 1; n <= rounds; n++ {
		round := Repeat{N: n, InvariantsOK: true}
		if rounds > 1 {
			fmt.Fprintf(cfg.Progress, "round %d of %d\n", n, rounds)
		}
		if cfg.Baselines != nil {
			// Baselines first, on a quiet machine: after a step the stack
			// is still closing orders and would slow them down.
			b, err := measureBaselines(ctx, *cfg.Baselines, cfg.Pin, cpu, conc, cfg.Users*cfg.PerUser, cfg.Progress)
			if err != nil {
				return nil, fmt.Errorf("baselines: %w", err)
			}
			if cfg.Baselines.MySQLDSN != "" {
				level := steps[len(steps)-1]
				fmt.Fprintf(cfg.Progress, "baseline: admission only, the same burst at %d through an API with no order tier (a process of its own)\n", level)
				if b.AdmissionOnly, err = admissionOnlyBaseline(ctx, cfg, shoppers, level, ""); err != nil {
					return nil, fmt.Errorf("admission-only baseline: %w", err)
				}
				fmt.Fprintf(cfg.Progress, "baseline: admission only %.0f req/s, winners' p50 %.1f ms, p99 %.1f ms\n",
					b.AdmissionOnly.RequestsPerSecond, b.AdmissionOnly.AcceptedP50, b.AdmissionOnly.AcceptedP99)
				if cfg.Risk {
					url, stop, err := allowAll()
					if err != nil {
						return nil, err
					}
					b.AdmissionOnlyRisk, err = admissionOnlyBaseline(ctx, cfg, shoppers, level, url)
					stop()
					if err != nil {
						return nil, fmt.Errorf("admission-only baseline with the risk check: %w", err)
					}
					fmt.Fprintf(cfg.Progress, "baseline: admission only with the risk check %.0f req/s, winners' p50 %.1f ms, p99 %.1f ms\n",
						b.AdmissionOnlyRisk.RequestsPerSecond, b.AdmissionOnlyRisk.AcceptedP50, b.AdmissionOnlyRisk.AcceptedP99)
				}
			}
			round.Baselines = b
			baselines = append(baselines, b)
		}
		if len(aof) > 0 {
			round.RedisAOF = map[string]AOFRun{}
			// Rotate the order each round so no setting always runs first.
			for i := range aof {
				r := aof[(i+n-1)%len(aof)]
				fmt.Fprintf(cfg.Progress, "redis-aof=%s: admission script, %d calls at c=%d on %s\n", r.mode, cfg.Users*cfg.PerUser, conc, r.addr)
				perSec, lat, err := luaBaseline(ctx, r.addr, conc, cfg.Users*cfg.PerUser)
				if err != nil {
					return nil, fmt.Errorf("redis-aof=%s: %w", r.mode, err)
				}
				p50, p99 := latencyPercentiles(lat)
				round.RedisAOF[r.mode] = AOFRun{PerSecond: perSec, P50: p50, P99: p99}
				fmt.Fprintf(cfg.Progress, "redis-aof=%s: %.0f calls/s, p50 %.2f ms, p99 %.2f ms\n", r.mode, perSec, p50, p99)
			}
			aofRounds = append(aofRounds, round.RedisAOF)
		}
		var last Step
		for _, level := range steps {
			r := &stepRunner{cfg: cfg, c: c, api: admin, shoppers: shoppers, rep: rep, costs: cs, cpu: cpu}
			if rounds > 1 {
				r.label = fmt.Sprintf("round %d ", n)
			}
			st, err := r.run(ctx, level)
			if err != nil {
				return nil, err
			}
			if rounds > 1 {
				st.Repeat = n
			}
			rep.Steps = append(rep.Steps, *st)
			last = *st
			if !st.InvariantsOK {
				rep.InvariantsOK = false
				round.InvariantsOK = false
			}
		}
		if b := round.Baselines; b != nil {
			after, err := measureNoop(ctx, *cfg.Baselines, cpu, conc, cfg.Progress)
			if err != nil {
				return nil, fmt.Errorf("baselines after the steps: %w", err)
			}
			b.bracket(after)
			fmt.Fprintf(cfg.Progress, "baseline: Temporal no-op %.0f workflows/s before the steps, %.0f after: %.0f\n",
				b.TemporalNoopBefore, b.TemporalNoopAfter, b.TemporalNoopPerSecond)
		}
		round.Ratios = stepRatios(last, round.Baselines)
		ratioRounds = append(ratioRounds, round.Ratios)
		rep.Repeats = append(rep.Repeats, round)
	}
	rep.Temporal = cs.report()
	rep.Baselines = medianBaselines(baselines)
	var spread map[string]float64
	rep.Ratios, spread = AggregateRatios(ratioRounds)
	if rounds > 1 {
		rep.RatiosSpread = spread
	}
	if len(aofRounds) > 0 {
		rep.RedisAOF = aofResults(aofRounds)
	}
	if rounds == 1 {
		// One round: the steps and baselines say it all.
		rep.Repeats = nil
	}
	if cfg.Captchas > 0 {
		cc, err := measureCaptchas(ctx, cfg, admin, shoppers, c, conc, cfg.Captchas)
		if err != nil {
			return nil, err
		}
		if last := len(rep.Steps) - 1; last >= 0 && rep.Steps[last].SoldOutThroughput > 0 {
			cc.VsSoldOut = cc.PerSecond / rep.Steps[last].SoldOutThroughput
		}
		rep.Captcha = cc
	}
	return rep, nil
}

func makeShoppers(cfg Config, as *client.Client) ([]shopper, error) {
	out := make([]shopper, cfg.Users)
	base := int64(rand.IntN(1_000_000_000)) * 1000
	for i := range out {
		user := base + int64(i) + 1
		tok, err := api.IssueToken(cfg.JWTSecret, user, 2*time.Hour, time.Now())
		if err != nil {
			return nil, err
		}
		out[i] = shopper{user: user, auth: "Bearer " + tok, index: i, api: as.WithToken(tok)}
	}
	return out, nil
}

// httpClient is the load loop's client, on fasthttp: the load generator
// must cost far less than the server it measures. Everything else goes
// through the typed client.
type httpClient struct {
	base string
	hc   *fasthttp.Client
}

// newLoadClient is the load loop's client of the API at base: as many
// connections as requests in flight.
func newLoadClient(base string) *httpClient {
	return &httpClient{base: base, hc: &fasthttp.Client{MaxConnsPerHost: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}}
}

// warm opens the connections a closed-loop burst at level uses before its
// clock starts. Without it every burst began with level connections dialled
// at once, and the first few hundred answers — the winners' — carried the
// dials and the kernel's accept queue besides the handler. In production
// shoppers reach the API through a load balancer that keeps its upstream
// connections open.
func (c *httpClient) warm(level int) {
	for range 2 {
		var wg sync.WaitGroup
		for range level {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, _, _ = c.do("GET", "/healthz", "", nil)
			}()
		}
		wg.Wait()
	}
}

// do sends one request; header is name, value pairs.
func (c *httpClient) do(method, path, auth string, body []byte, header ...string) (int, []byte, string, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(c.base + path)
	req.Header.SetMethod(method)
	req.Header.SetContentType("application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.SetBody(body)
	if err := c.hc.Do(req, resp); err != nil {
		return 0, nil, "", err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), string(resp.Header.Peek(client.HeaderLayer)), nil
}

type stepRunner struct {
	cfg Config
	c   *httpClient // the load loop's
	// api is the typed client with the admin token and webhook secret.
	api      *client.Client
	shoppers []shopper
	rep      *Report
	costs    *costs // nil: the Temporal cost is not counted
	// cpu meters the Temporal server (nil: not on this machine); creating
	// is its reading when the step's burst began.
	cpu      *serverCPU
	creating *cpuSnap
	// label names the round in problems ("round 2 ", "warm-up "; "" in a
	// single-round run).
	label string
	step  *Step
	// start is when the first burst began: the origin of the step's times.
	start time.Time
	// burstStart is when the latest burst began: the origin of its
	// results' times.
	burstStart time.Time
	mu         sync.Mutex // guards problems found by concurrent followers
	// paymentIDs are the orders' payments at the provider (order number →
	// payment id), from their checkouts.
	paymentIDs sync.Map
}

func (r *stepRunner) problem(format string, args ...any) {
	r.rep.Problems = append(r.rep.Problems, fmt.Sprintf("%sstep %d: ", r.label, r.step.Concurrency+r.step.Rate)+fmt.Sprintf(format, args...))
	r.step.InvariantsOK = false
}

func (r *stepRunner) run(ctx context.Context, level int) (*Step, error) {
	r.step = &Step{Latency: map[string]Percentiles{}, InvariantsOK: true}
	if r.cfg.Rate > 0 {
		r.step.Rate = level
	} else {
		r.step.Concurrency = level
	}
	if err := r.createSession(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(r.cfg.Progress, "step %s: session %d, %d units, %d shoppers × %d requests\n",
		r.levelName(), r.step.SessionID, r.cfg.Stock, r.cfg.Users, r.cfg.PerUser)

	before, haveStarts, err := scrapeStarts(ctx, r.cfg.BaseURL)
	if err != nil {
		fmt.Fprintf(r.cfg.Progress, "step %s: no workflow-start latency: %v\n", r.levelName(), err)
	}
	r.creating = r.cpu.mark()
	results, dur := r.burst(ctx, level, "burst", r.cfg.Keys, r.cfg.Users*r.cfg.PerUser)
	r.step.DurationSeconds = dur.Seconds()
	r.step.Throughput = float64(len(results)) / dur.Seconds()
	r.tally(results)

	// The same burst again, now that the session is sold out: the fast
	// path. With --keys, half of it without keys and half with a fresh key
	// on every request, in alternating slices: the orders being created
	// meanwhile take CPU from both alike. Both measure a sale that has
	// been sold out for a moment: every API has read the sell-out, and the
	// keys are stamped more than the clock skew after the last win (in the
	// first second after a sell-out a keyed loser costs one Redis read).
	if wait := time.Until(r.burstStart.Add(time.Duration(r.step.TimeToSellOutSeconds*float64(time.Second)) +
		seckill.KeyClockSkew + 500*time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	n := r.cfg.Users * r.cfg.PerUser
	if !r.cfg.Keys {
		again, dur := r.burst(ctx, level, "sold-out burst", false, n)
		r.step.SoldOutThroughput = float64(len(again)) / dur.Seconds()
		r.step.Latency["soldout_burst"] = percentiles(again, "")
	} else {
		const slices = 2
		var plain, keyed []result
		var plainDur, keyedDur time.Duration
		for i := range 2 * slices {
			// U K K U: neither half always goes first.
			if (i+i/2)%2 == 0 {
				rs, d := r.burst(ctx, level, "sold-out burst", false, n/(2*slices))
				plain, plainDur = append(plain, rs...), plainDur+d
			} else {
				rs, d := r.burst(ctx, level, "sold-out burst, keyed", true, n/(2*slices))
				keyed, keyedDur = append(keyed, rs...), keyedDur+d
			}
		}
		r.step.SoldOutThroughput = float64(len(plain)) / plainDur.Seconds()
		r.step.Latency["soldout_burst"] = percentiles(plain, "")
		r.step.SoldOutKeyedThroughput = float64(len(keyed)) / keyedDur.Seconds()
		r.step.Latency["soldout_keyed_burst"] = percentiles(keyed, "")
		r.step.SoldOutKeyedFromMemory = outcomeCounts(keyed)[OutSoldOutMemory]
	}

	won := accepted(results)
	r.follow(ctx, won)
	if haveStarts {
		if after, ok, err := scrapeStarts(ctx, r.cfg.BaseURL); err == nil && ok {
			r.step.StartLatency = startLatency(before, after)
		}
	}
	r.reconcile(ctx)
	fmt.Fprintf(r.cfg.Progress, "step %s: %.0f req/s, sold-out %.0f req/s, %d accepted, all WAIT_PAY after %.2fs (%.0f orders/s), invariants ok: %v\n",
		r.levelName(), r.step.Throughput, r.step.SoldOutThroughput, len(won), r.step.TimeToAllWaitPaySeconds,
		r.step.OrdersPerSecond, r.step.InvariantsOK)
	return r.step, nil
}

func (r *stepRunner) levelName() string {
	if r.step.Rate > 0 {
		return fmt.Sprintf("rate=%d/s", r.step.Rate)
	}
	return fmt.Sprintf("c=%d", r.step.Concurrency)
}

func (r *stepRunner) createSession(ctx context.Context) error {
	now := time.Now().UTC()
	sess, err := r.api.CreateSession(ctx, &seckill.Session{SKUID: 7000, Title: "bench", PriceCents: priceCents,
		TotalStock: r.cfg.Stock, PerUserLimit: r.cfg.Limit, StartAt: now.Add(-time.Second), EndAt: now.Add(2 * time.Hour)})
	if err != nil {
		return fmt.Errorf("create session: %w (is the API at %s, with this admin token?)", err, r.cfg.BaseURL)
	}
	r.step.SessionID = sess.ID
	if _, err := r.api.Preheat(ctx, sess.ID, false); err != nil {
		return fmt.Errorf("preheat: %w", err)
	}
	return nil
}

// burst sends Users×PerUser orders, shuffled, at the given load, and
// returns every request's result and the wall time.
// burst sends n requests of the shoppers at the level's load; keyed, each
// with a fresh Idempotency-Key (a UUIDv7).
func (r *stepRunner) burst(ctx context.Context, level int, name string, keyed bool, n int) ([]result, time.Duration) {
	order := make([]int, n)
	for i := range order {
		order[i] = i % r.cfg.Users
	}
	rand.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", r.step.SessionID)
	body := []byte(fmt.Sprintf(`{"quantity":%d}`, r.cfg.Quantity))
	results := make([]result, n)
	var keys []string
	if keyed {
		// Made before the clock starts: the load driver shares the CPUs.
		keys = make([]string, n)
		for i := range keys {
			keys[i] = uuid.Must(uuid.NewV7()).String()
		}
	}
	var sent, done atomic.Int64
	if r.cfg.Rate <= 0 {
		r.c.warm(level)
	}
	start := time.Now()
	r.burstStart = start
	one := func(i int) {
		s := r.shoppers[order[i]]
		t0 := time.Now()
		var header []string
		if keyed {
			header = []string{api.HeaderIdempotencyKey, keys[i]}
		}
		code, raw, layer, err := r.c.do("POST", path, s.auth, body, header...)
		res := result{at: t0.Sub(start), latency: time.Since(t0), shopper: s.index, outcome: classify(code, raw, layer, err)}
		if res.outcome == OutAccepted {
			var v struct {
				OrderNo string `json:"order_no"`
			}
			_ = json.Unmarshal(raw, &v)
			res.orderNo = v.OrderNo
		}
		results[i] = res
		done.Add(1)
	}
	if r.start.IsZero() {
		r.start = start
	}
	stop := r.progress(name, &done, n)
	var wg sync.WaitGroup
	if r.cfg.Rate > 0 {
		// Open loop: arrivals on a clock, whatever the answers do.
		interval := time.Second / time.Duration(level)
		sem := make(chan struct{}, 20000)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
				time.Sleep(d)
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() { defer wg.Done(); defer func() { <-sem }(); one(i) }()
		}
	} else {
		for w := 0; w < level; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					i := int(sent.Add(1)) - 1
					if i >= n {
						return
					}
					one(i)
				}
			}()
		}
	}
	wg.Wait()
	dur := time.Since(start)
	stop()
	return results[:int(done.Load())], dur
}

// progress prints a progress line every half second until stopped.
func (r *stepRunner) progress(name string, done *atomic.Int64, n int) func() {
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprintf(r.cfg.Progress, "\r  %s %s: %d/%d answered\n", r.levelName(), name, done.Load(), n)
				return
			case <-t.C:
				fmt.Fprintf(r.cfg.Progress, "\r  %s %s: %d/%d answered", r.levelName(), name, done.Load(), n)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// classify names the outcome of one admission from its status, error code
// and the layer the API says decided it.
func classify(code int, body []byte, layer string, err error) string {
	if err != nil {
		return OutError
	}
	if code == 202 {
		return OutAccepted
	}
	var e seckill.ErrorBody
	_ = json.Unmarshal(body, &e)
	switch {
	case layer == api.LayerSoldOutMemory:
		return OutSoldOutMemory
	case e.Code == seckill.ESOLDOUT:
		return OutSoldOutRedis
	case e.Code == seckill.ELIMIT:
		return OutLimit
	case e.Code == seckill.ERATELIMITED:
		return OutRateLimited
	case e.Code == seckill.ENOTSTARTED || e.Code == seckill.EENDED:
		return OutWindow
	default:
		return OutError
	}
}

func accepted(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.outcome == OutAccepted {
			out = append(out, r)
		}
	}
	return out
}

// tally fills the funnel, latencies, timeline and time to sell out, and
// checks the admission invariants (never more than the stock, never over
// the per-user limit, no order number twice).
func (r *stepRunner) tally(rs []result) {
	f := &r.step.Funnel
	f.Requests = len(rs)
	perShopper := map[int]int{}
	seen := map[string]bool{}
	var lastWin time.Duration
	for _, x := range rs {
		switch x.outcome {
		case OutAccepted:
			f.Accepted++
			perShopper[x.shopper] += r.cfg.Quantity
			if seen[x.orderNo] {
				r.problem("order number %s accepted twice", x.orderNo)
			}
			seen[x.orderNo] = true
			if end := x.at + x.latency; end > lastWin {
				lastWin = end
			}
		case OutSoldOutMemory:
			f.SoldOutMemory++
		case OutSoldOutRedis:
			f.SoldOutRedis++
		case OutLimit:
			f.LimitExceeded++
		case OutRateLimited:
			f.RateLimited++
		case OutWindow:
			f.Window++
		default:
			f.OtherErrors++
		}
	}
	units := f.Accepted * r.cfg.Quantity
	if units > r.cfg.Stock {
		r.problem("oversold: %d units accepted for %d", units, r.cfg.Stock)
	}
	maxUnits := r.cfg.Users * r.cfg.Limit
	if f.RateLimited == 0 && f.OtherErrors == 0 && maxUnits >= r.cfg.Stock && r.cfg.Stock-units >= r.cfg.Quantity {
		r.problem("%d units left unsold although demand exceeded stock", r.cfg.Stock-units)
	}
	for s, u := range perShopper {
		if u > r.cfg.Limit {
			r.problem("shopper %d holds %d units, limit %d", s, u, r.cfg.Limit)
		}
	}
	r.step.TimeToSellOutSeconds = lastWin.Seconds()
	for _, o := range Outcomes {
		if p := percentiles(rs, o.Code); p.Count > 0 {
			r.step.Latency[o.Code] = p
		}
	}
	r.step.Timeline = timeline(rs)
}

// percentiles of the results with outcome o ("" = all).
func percentiles(rs []result, o string) Percentiles {
	var ls []float64
	for _, x := range rs {
		if o == "" || x.outcome == o {
			ls = append(ls, float64(x.latency.Microseconds())/1000)
		}
	}
	if len(ls) == 0 {
		return Percentiles{}
	}
	sort.Float64s(ls)
	at := func(q float64) float64 { return ls[min(len(ls)-1, int(q*float64(len(ls))))] }
	return Percentiles{Count: len(ls), P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: ls[len(ls)-1]}
}

func timeline(rs []result) []Bucket {
	const width = 100 * time.Millisecond
	byBucket := map[int][]result{}
	last := 0
	for _, x := range rs {
		b := int(x.at / width)
		byBucket[b] = append(byBucket[b], x)
		last = max(last, b)
	}
	out := make([]Bucket, 0, last+1)
	for b := 0; b <= last; b++ {
		xs := byBucket[b]
		p := percentiles(xs, "")
		out = append(out, Bucket{AtSeconds: float64(b) * width.Seconds(), Requests: len(xs),
			Accepted: len(accepted(xs)), P50: p.P50, P99: p.P99})
	}
	return out
}
