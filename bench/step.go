package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
)

// stepRunner runs one load step: a fresh session, its burst and the
// sold-out burst after it, the followers of its winners, and the checks of
// what they saw.
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
	// eligible says which shoppers may buy in a reserved sale (those who
	// registered); nil in a first-come sale, where everyone may.
	eligible func(shopper int) bool
	// label names the round in problems ("round 2 ", "warm-up "; "" in a
	// single-round run).
	label string
	// items is the items of the step's sale (0: one SKU): the stock is
	// split over them, and the burst's requests name them in turn.
	items int
	step  *Step
	// start is when the first burst began: the origin of the step's times.
	start time.Time
	// burstStart is when the latest burst began: the origin of its
	// results' times.
	burstStart time.Time
	// fiber sends to the step's bare Fiber handler (nil without
	// --baselines): one warm process for all of the step's Fiber figures.
	fiber *httpClient
	mu    sync.Mutex // guards problems found by concurrent followers
	// paymentIDs are the orders' payments at the provider (order number →
	// payment id), from their checkouts.
	paymentIDs sync.Map
	// paidLate are the orders whose shopper paid, or tried to, from their
	// earliest pay deadline on (payBy): their pay timer may win.
	paidLate sync.Map
}

func (r *stepRunner) problem(format string, args ...any) {
	r.rep.Problems = append(r.rep.Problems, fmt.Sprintf("%sstep %d: ", r.label, r.step.Concurrency+r.step.Rate)+fmt.Sprintf(format, args...))
	r.step.InvariantsOK = false
}

func (r *stepRunner) run(ctx context.Context, level int) (*Step, error) {
	r.newStep(level)
	if err := r.createSession(ctx); err != nil {
		return nil, err
	}
	return r.sell(ctx)
}

// newStep starts the record of a step at level.
func (r *stepRunner) newStep(level int) {
	r.step = &Step{Latency: map[string]Percentiles{}, InvariantsOK: true}
	if r.cfg.Rate > 0 {
		r.step.Rate = level
	} else {
		r.step.Concurrency = level
	}
}

// sell sends the step's bursts at its session, on sale now, follows the
// winners and checks the invariants.
func (r *stepRunner) sell(ctx context.Context) (*Step, error) {
	level := r.step.Concurrency + r.step.Rate
	fmt.Fprintf(r.cfg.Progress, "step %s: session %d, %d units, %d shoppers × %d requests\n",
		r.levelName(), r.step.SessionID, r.cfg.Stock, r.cfg.Users, r.cfg.PerUser)

	before, haveStarts, err := scrapeStarts(ctx, r.cfg.BaseURL)
	if err != nil {
		fmt.Fprintf(r.cfg.Progress, "step %s: no workflow-start latency: %v\n", r.levelName(), err)
	}
	if r.cfg.Baselines != nil {
		stop, err := r.startFiber(ctx, level)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if err := r.fiberBeside(ctx, level); err != nil {
		return nil, err
	}
	r.creating = r.cpu.mark()
	results, dur, err := r.burst(ctx, level, "burst", r.cfg.Keys, r.cfg.Users*r.cfg.PerUser)
	if err != nil {
		return nil, err
	}
	r.step.DurationSeconds = dur.Seconds()
	r.step.Throughput = float64(len(results)) / dur.Seconds()
	r.tally(results)

	r.step.Losers = afterSellOut(results, dur)

	won := accepted(results)
	if err := r.follow(ctx, won, func() error { return r.soldOut(ctx, level) }); err != nil {
		return nil, err
	}
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

// fiberBeside sends the step's burst, keyed alike, to a bare Fiber handler
// just before the step's own (with --baselines, in a first-come sale): the
// ceiling its burst and its losers are divided by, measured on the machine
// as the burst finds it. The round's Fiber baseline is measured minutes
// earlier, before the no-op workflows and the admission-only API, and the
// machine's pace moves by more than the ratios' distance to their targets
// in that time (docs/BENCHMARKS.md). Before the burst, not after it: the
// orders are created after it.
func (r *stepRunner) fiberBeside(ctx context.Context, level int) error {
	if r.fiber == nil || r.step.Sale != "" {
		return nil
	}
	rs, dur, err := r.burstBefore(ctx, r.fiber, level, "bare Fiber beside the burst", r.cfg.Users*r.cfg.PerUser)
	if err != nil {
		return err
	}
	r.step.FiberThroughput = float64(len(rs)) / dur.Seconds()
	return nil
}

// startFiber runs the step's bare Fiber handler, a process of its own, and
// warms it with a quarter of the burst, not measured: the API it is set
// beside has answered the warm-up step and the rounds before, and a fresh
// process's first slice ran well below its later ones' pace
// (docs/BENCHMARKS.md). One process for the step: the sold-out slices had
// a fresh one of their own, whose first slice was cold again.
func (r *stepRunner) startFiber(ctx context.Context, level int) (stop func(), err error) {
	srv, err := startBaselineServer(ctx, r.cfg.Baselines.Exec, r.cfg.Pin.frontPrefix(), ServerSpec{Kind: ServerFiber})
	if err != nil {
		return nil, fmt.Errorf("bare Fiber beside the step: %w", err)
	}
	fiber := newLoadClient("http://" + srv.addr)
	if _, _, err := r.burstBefore(ctx, fiber, level, "bare Fiber warm-up", r.cfg.Users*r.cfg.PerUser/4); err != nil {
		srv.stop()
		return nil, err
	}
	r.fiber = fiber
	return func() { srv.stop(); r.fiber = nil }, nil
}

// burstBefore sends a burst keyed as the step's to c instead of the
// stack, before the step's own: the step's times count from its own burst.
func (r *stepRunner) burstBefore(ctx context.Context, c *httpClient, level int, name string, n int) ([]result, time.Duration, error) {
	stack := r.c
	r.c = c
	defer func() { r.c, r.start = stack, time.Time{} }()
	return r.burst(ctx, level, name, r.cfg.Keys, n)
}

// soldOut sends the burst again once the session is sold out and its
// orders are created: the fast path. With --keys, half of it without keys
// and half with a fresh key on every request; with --baselines, the bare
// Fiber handler too, in alternating slices, so that whatever else runs on
// the machine takes CPU from each alike and the sold-out ratios compare
// answers measured under the same load (a Fiber figure measured before
// the step, on a quieter machine, made soldout_vs_fiber swing between
// runs; docs/BENCHMARKS.md). Not while the orders are created: the starter
// holds its starts while the API's front door is busy, and so started
// them in the Fiber slices only, which then ran beside the order tier and
// the API's slices did not. It measures a sale that has been sold out for
// a moment: every API has read the sell-out, and the keys are stamped
// more than the clock skew after the last win (Losers measure the first
// second).
func (r *stepRunner) soldOut(ctx context.Context, level int) error {
	if wait := time.Until(r.burstStart.Add(time.Duration(r.step.TimeToSellOutSeconds*float64(time.Second)) +
		seckill.KeyClockSkew + 500*time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	if r.cfg.PayTimeout > 0 && !time.Now().Before(r.burstStart.Add(r.cfg.PayTimeout)) {
		// The unpaid orders close from here on and their units are on sale
		// again: the burst would buy them, not meet a sold-out sale (it
		// happens when following the orders waited out Settle).
		fmt.Fprintf(r.cfg.Progress, "  %s: no sold-out burst: the first pay deadline passed while the orders were followed\n", r.levelName())
		return nil
	}
	// And for the machine to be quiet: the server's tasks left over from
	// the orders' creation slowed the first slices of each step. At most a
	// quarter of the time left before the first pay deadline (none is
	// earlier than the burst's start plus the pay timeout): the slices are
	// to end well before it, the closes being measured alone.
	most := 10 * time.Second
	if r.cfg.PayTimeout > 0 {
		most = min(most, time.Until(r.burstStart.Add(r.cfg.PayTimeout))/4)
	}
	fmt.Fprintf(r.cfg.Progress, "  %s: the machine quiet after %.1fs\n", r.levelName(), quiet(ctx, most).Seconds())
	type slice struct {
		name  string
		keyed bool
		c     *httpClient // nil: the stack's
		rs    []result
		dur   time.Duration
	}
	slices := []*slice{{name: "sold-out burst"}}
	if r.cfg.Keys {
		slices = append(slices, &slice{name: "sold-out burst, keyed", keyed: true})
	}
	if fiber := r.fiber; fiber != nil {
		slices = append(slices, &slice{name: "bare Fiber beside it", c: fiber})
		if r.cfg.Keys {
			// The keyed burst's own Fiber slices, sent with a fresh key
			// too: the load generator makes a UUIDv7 per request and sends
			// the longer request, a cost of the client, not of the API,
			// which each keyed ratio then carries on both sides.
			slices = append(slices, &slice{name: "bare Fiber beside it, keyed", keyed: true, c: fiber})
		}
	}
	// Several times the burst's requests: slices of the burst's size were
	// too short to measure a pace on a shared host, where a GC or another
	// process's share of the cores moved one slice's pace far more than
	// the kinds differ (docs/BENCHMARKS.md).
	const turns, scale = 2, 4
	per := scale * r.cfg.Users * r.cfg.PerUser / (turns * len(slices))
	stack := r.c
	for i := range turns * len(slices) {
		// U K F Fk Fk F K U, a palindrome: the machine's pace drifts
		// across the step, and a steady drift then weighs on every kind
		// alike, as the admission-only bursts' K U U K. U K F K F U gave
		// Fiber the later slices on average.
		j := i % len(slices)
		if i/len(slices)%2 == 1 {
			j = len(slices) - 1 - j
		}
		sl := slices[j]
		if sl.c != nil {
			r.c = sl.c
		}
		rs, d, err := r.burst(ctx, level, sl.name, sl.keyed, per)
		if err != nil {
			return err
		}
		r.c = stack
		sl.rs, sl.dur = append(sl.rs, rs...), sl.dur+d
	}
	for _, sl := range slices {
		perSec := float64(len(sl.rs)) / sl.dur.Seconds()
		switch {
		case sl.c != nil && sl.keyed:
			r.step.SoldOutFiberKeyedThroughput = perSec
		case sl.c != nil:
			r.step.SoldOutFiberThroughput = perSec
		case sl.keyed:
			r.step.SoldOutKeyedThroughput = perSec
			r.step.Latency["soldout_keyed_burst"] = percentiles(sl.rs, "")
			r.step.SoldOutKeyedFromMemory = outcomeCounts(sl.rs)[OutSoldOutMemory]
		default:
			r.step.SoldOutThroughput = perSec
			r.step.Latency["soldout_burst"] = percentiles(sl.rs, "")
		}
	}
	return nil
}

func (r *stepRunner) levelName() string {
	sale := ""
	if r.step.Sale != "" {
		sale = r.step.Sale + " "
	}
	if r.step.Rate > 0 {
		return fmt.Sprintf("%srate=%d/s", sale, r.step.Rate)
	}
	return fmt.Sprintf("%sc=%d", sale, r.step.Concurrency)
}

func (r *stepRunner) createSession(ctx context.Context) error {
	now := time.Now().UTC()
	s := &seckill.Session{SKUID: 7000, Title: "bench", PriceCents: priceCents,
		TotalStock: r.cfg.Stock, PerUserLimit: r.cfg.Limit, StartAt: now.Add(-time.Second), EndAt: now.Add(2 * time.Hour)}
	if r.items > 1 {
		items := make([]seckill.Item, r.items)
		for i := range items {
			items[i] = seckill.Item{SKUID: itemSKU(i), Title: fmt.Sprintf("size %d", i+1), PriceCents: priceCents,
				TotalStock: r.cfg.Stock / r.items}
			if i < r.cfg.Stock%r.items {
				items[i].TotalStock++ // the first items take the units that do not split evenly
			}
		}
		s.SetItems(items)
	}
	sess, err := r.api.CreateSession(ctx, s)
	if err != nil {
		return fmt.Errorf("create session: %w (is the API at %s, with this admin token?)", err, r.cfg.BaseURL)
	}
	r.step.SessionID = sess.ID
	if _, err := r.api.Preheat(ctx, sess.ID, false); err != nil {
		return fmt.Errorf("preheat: %w", err)
	}
	return nil
}
