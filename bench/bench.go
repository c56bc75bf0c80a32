// Package bench is `seckill-lab bench`: a black-box load generator for a
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
	"fmt"
	"io"
	"runtime"
	"time"

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
	// TaskQueue is the stack's SECKILL_TASK_QUEUE: a draw sale's order
	// workflows are counted on it (session ids repeat across the
	// databases a shared Temporal server may serve).
	TaskQueue  string
	CostSample int
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
	// Tracing runs the admission-only baseline twice more, traced with
	// every request sampled and with 1 % (Baselines.AdmissionOnlyTraced,
	// AdmissionOnlySampled; tracing_*_vs_admission_only).
	Tracing bool
	// Registrations, when positive, runs a reserved sale after the rounds
	// (Report.Reserved): that many distinct shoppers register through the
	// API at the run's concurrency, then the run's shoppers buy at its
	// start, every other one of them a registrant. RegistrationWindow is
	// its registration window (0: sized by a pilot's pace). Stores, when
	// set, is where the bench reads what the registrations weigh.
	Registrations      int
	RegistrationWindow time.Duration
	Stores             *Stores
	// Draw, when positive, runs a draw sale of that many units after the
	// rounds (and the reserved sale; Report.Draw): every shopper of the
	// run registers through the API, the sale's workflow draws at its
	// start, then each asks its registration and the winners buy.
	Draw int
	// Items, when above 1, runs a first-come sale of that many items in
	// each round, right after its one-item steps (Report.Items: the last
	// round's), the stock split over them and the burst spread over them,
	// against the round's last one-item step (items_vs_one_item).
	Items int
	// Keys sends every purchase with a fresh Idempotency-Key (a UUIDv7,
	// as the shop page does) and measures the sold-out burst both with and
	// without keys (Step.SoldOutKeyedThroughput). Off, no request has one.
	Keys bool
}

// warmupStock caps the units the warm-up step sells: enough winners to
// take every connection of the API's pools, few enough that a 5,000-unit
// run does not wait for a second 5,000-order creation.
const warmupStock = 500

// priceCents is the price of the bench sessions' unit: payments must match it.
const priceCents = 100

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
			PayTimeout: cfg.PayTimeout.String(), PayAfterCreation: cfg.PayAfterCreation, Registrations: cfg.Registrations,
			Draw: cfg.Draw, Items: cfg.Items},
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
		// Every winner paid, so no order is left to time out; the pay
		// timeout stays, as on a slow machine its timers race the payments
		// too (stepRunner.pay).
		wcfg.PayRatio, wcfg.Stock = 1, min(cfg.Stock, warmupStock)
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
				if b.AdmissionOnly, err = admissionOnlyBaseline(ctx, cfg, shoppers, level, n, "", nil); err != nil {
					return nil, fmt.Errorf("admission-only baseline: %w", err)
				}
				fmt.Fprintf(cfg.Progress, "baseline: admission only %.0f req/s, winners' p50 %.1f ms, p99 %.1f ms\n",
					b.AdmissionOnly.RequestsPerSecond, b.AdmissionOnly.AcceptedP50, b.AdmissionOnly.AcceptedP99)
				if u := b.AdmissionOnly.Unkeyed; u != nil {
					fmt.Fprintf(cfg.Progress, "baseline: admission only without keys %.0f req/s, refusals' p50 %.1f ms (keyed %.1f ms)\n",
						u.RequestsPerSecond, u.RefusedP50, b.AdmissionOnly.RefusedP50)
				}
				if cfg.Risk {
					url, stop, err := allowAll()
					if err != nil {
						return nil, err
					}
					b.AdmissionOnlyRisk, err = admissionOnlyBaseline(ctx, cfg, shoppers, level, n, url, nil)
					stop()
					if err != nil {
						return nil, fmt.Errorf("admission-only baseline with the risk check: %w", err)
					}
					fmt.Fprintf(cfg.Progress, "baseline: admission only with the risk check %.0f req/s, winners' p50 %.1f ms, p99 %.1f ms\n",
						b.AdmissionOnlyRisk.RequestsPerSecond, b.AdmissionOnlyRisk.AcceptedP50, b.AdmissionOnlyRisk.AcceptedP99)
				}
				if cfg.Tracing {
					if err := tracedBaselines(ctx, cfg, shoppers, level, n, b); err != nil {
						return nil, err
					}
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
		if cfg.Items > 1 {
			// Right after the round's one-item step, at its load: the two
			// bursts side by side, each round's ratio one of the median's.
			s, err := measureItems(ctx, cfg, c, admin, shoppers, rep, cpu, steps[len(steps)-1], cfg.Items)
			if err != nil {
				return nil, fmt.Errorf("sale of items: %w", err)
			}
			if !s.Step.InvariantsOK {
				rep.InvariantsOK = false
				round.InvariantsOK = false
			}
			if s.VsOneItem > 0 {
				round.Ratios["items_vs_one_item"] = s.VsOneItem
			}
			rep.Items = s
		}
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
	if cfg.Registrations > 0 {
		res, err := measureReserved(ctx, cfg, c, admin, shoppers, rep, cpu, steps[len(steps)-1], conc)
		if err != nil {
			return nil, fmt.Errorf("reserved sale: %w", err)
		}
		if !res.Step.InvariantsOK {
			rep.InvariantsOK = false
		}
		rep.Reserved = res
	}
	if cfg.Draw > 0 {
		d, err := measureDraw(ctx, cfg, c, admin, shoppers, rep, cpu, steps[len(steps)-1], conc, cfg.Draw)
		if err != nil {
			return nil, fmt.Errorf("draw sale: %w", err)
		}
		if !d.Step.InvariantsOK {
			rep.InvariantsOK = false
		}
		rep.Draw = d
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
