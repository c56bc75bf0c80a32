package starter_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/temporal/starter"
)

// The limit grows while starts answer within High, shrinks by a tenth per
// round trip slower than that, keeps a server that is busier but still
// quick enough at full use, halves on timeouts and overload (once per
// congestion event), and grows back after.
func TestLimitAdapts(t *testing.T) {
	l := &starter.Limit{Min: 1, Max: 64, Initial: 4, High: 100 * time.Millisecond}
	now := time.Unix(1000, 0)
	// succeed sends a full window of starts taking rtt each.
	succeed := func(rtt time.Duration) {
		n := l.Current()
		for i := 0; i < n; i++ {
			l.Succeeded(now, now.Add(rtt), n)
		}
		now = now.Add(rtt)
	}
	for i := 0; i < 8; i++ {
		succeed(10 * time.Millisecond)
	}
	require.Greater(t, l.Current(), 16, "grows by its square root per round trip while starts are quick")
	for i := 0; i < 20; i++ {
		succeed(10 * time.Millisecond)
	}
	require.Equal(t, 64, l.Current(), "capped at Max")

	// Slower than High: a tenth per round trip, not per call.
	for i := 0; i < 3; i++ {
		succeed(400 * time.Millisecond)
	}
	require.Less(t, l.Current(), 64)
	require.GreaterOrEqual(t, l.Current(), 46, "at most a tenth per round trip")

	// Four times slower than at first but still within High (the server
	// is busy running the workflows): no reason to throttle.
	for i := 0; i < 20; i++ {
		succeed(40 * time.Millisecond)
	}
	require.Equal(t, 64, l.Current(), "a busier server that still answers quickly is used in full")

	// Timeouts: halved once per event, however many calls of it fail.
	sent := now.Add(time.Millisecond)
	for i := 0; i < 20; i++ {
		l.Overloaded(sent, sent.Add(5*time.Second))
	}
	require.Equal(t, 32, l.Current())
	now = now.Add(6 * time.Second)
	l.Overloaded(now, now.Add(time.Second)) // a call sent after the cut: a new event
	require.Equal(t, 16, l.Current())
	now = now.Add(time.Second)

	// Recovery: quick answers again grow it.
	for i := 0; i < 5; i++ {
		succeed(40 * time.Millisecond)
	}
	require.Greater(t, l.Current(), 25)

	// An idle starter does not grow a limit it does not use (after the
	// round trip that was still busy has been counted).
	idle := 0
	for i := 0; i < 100; i++ {
		l.Succeeded(now, now.Add(40*time.Millisecond), 1)
		now = now.Add(40 * time.Millisecond)
		if i == 1 {
			idle = l.Current()
		}
	}
	require.Equal(t, idle, l.Current())
}

// fakeFlow starts "workflows" in memory: latency grows with the starts in
// flight past capacity (a server saturating), and may fail on demand.
type fakeFlow struct {
	mu       sync.Mutex
	inFlight int
	peak     int
	started  map[string]int
	order    []int64 // session of each start, in order
	latency  func(inFlight int) time.Duration
	fail     func(req *seckill.OrderRequest) error
}

func (f *fakeFlow) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	f.mu.Lock()
	f.inFlight++
	if f.inFlight > f.peak {
		f.peak = f.inFlight
	}
	lat, n := f.latency, f.inFlight
	f.order = append(f.order, req.SessionID)
	f.mu.Unlock()
	d := lat(n)
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if f.fail != nil {
		if err := f.fail(req); err != nil {
			return false, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started[req.OrderNo]++
	return f.started[req.OrderNo] == 1, nil
}

// count is how many orders were started.
func (f *fakeFlow) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

type fakeGate struct {
	mu      sync.Mutex
	cleared map[string]bool
}

func (g *fakeGate) Started(_ context.Context, _ int64, orderNo string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cleared[orderNo] = true
	return nil
}

func req(session int64, i int) *seckill.OrderRequest {
	return &seckill.OrderRequest{Reservation: seckill.Reservation{SessionID: session, OrderNo: fmt.Sprintf("%d-%d", session, i), Quantity: 1}}
}

func newStarter(t *testing.T, f *fakeFlow, l *starter.Limit) (*starter.Starter, *fakeGate) {
	t.Helper()
	g := &fakeGate{cleared: map[string]bool{}}
	s := starter.New(starter.Config{Flow: f, Gate: g, Limit: l, CallTimeout: time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	return s, g
}

// Against a server whose latency climbs once more than 8 starts are in
// flight, the starter settles near 8 in flight, starts everything exactly
// once and clears every pending entry.
func TestStarterFindsTheServersPace(t *testing.T) {
	f := &fakeFlow{started: map[string]int{}, latency: func(n int) time.Duration {
		if n <= 8 {
			return 5 * time.Millisecond
		}
		return time.Duration(n) * 5 * time.Millisecond / 8 * time.Duration(n) / 8
	}}
	s, g := newStarter(t, f, &starter.Limit{Min: 1, Max: 256, Initial: 2, High: 50 * time.Millisecond})
	const n = 2000
	for i := 0; i < n; i++ {
		require.True(t, s.Offer(req(1, i)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.True(t, s.Drain(ctx))
	require.Len(t, f.started, n)
	for no, k := range f.started {
		require.Equal(t, 1, k, no)
	}
	require.Len(t, g.cleared, n)
	require.Greater(t, f.peak, 4, "many starts in flight")
	require.Less(t, s.Limit().Current(), 40, "the limit stays near the server's knee, not at Max")
}

// Timeouts and ResourceExhausted halve the limit; the failed orders stay
// pending (not cleared) for the outbox; quick answers bring it back.
func TestStarterBacksOffAndRecovers(t *testing.T) {
	var mu sync.Mutex
	overloaded := false
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 2 * time.Millisecond },
		fail: func(*seckill.OrderRequest) error {
			mu.Lock()
			defer mu.Unlock()
			if overloaded {
				return serviceerror.NewResourceExhausted(0, "busy")
			}
			return nil
		}}
	s, g := newStarter(t, f, &starter.Limit{Min: 1, Max: 64, Initial: 32})
	ctx := context.Background()
	var batch []*seckill.OrderRequest
	for i := 0; i < 200; i++ {
		batch = append(batch, req(1, i))
	}
	for _, r := range s.Do(ctx, batch) {
		require.NoError(t, r.Err)
	}
	high := s.Limit().Current()
	require.Greater(t, high, 32, "quick answers grow the limit")

	mu.Lock()
	overloaded = true
	mu.Unlock()
	batch = batch[:0]
	for i := 200; i < 300; i++ {
		batch = append(batch, req(1, i))
	}
	for _, r := range s.Do(ctx, batch) {
		require.Error(t, r.Err)
		require.Equal(t, starter.KindOverloaded, starter.Kind(r.Err))
	}
	low := s.Limit().Current()
	require.LessOrEqual(t, low, high/4, "halved once per round of overload")
	for i := 200; i < 300; i++ {
		require.False(t, g.cleared[req(1, i).OrderNo], "a failed start stays pending")
	}

	mu.Lock()
	overloaded = false
	mu.Unlock()
	for round := 0; round < 20; round++ {
		batch = batch[:0]
		for i := 0; i < 100; i++ {
			batch = append(batch, req(1, 1000+round*100+i))
		}
		s.Do(ctx, batch)
	}
	require.Greater(t, s.Limit().Current(), low, "recovers once the server answers quickly again")
	require.Equal(t, starter.KindTimeout, starter.Kind(fmt.Errorf("start: %w", context.DeadlineExceeded)))
	require.Equal(t, starter.KindUnavailable, starter.Kind(serviceerror.NewUnavailable("down")))
}

// Two sessions share the starter fairly: a small sale queued behind a big
// one is started round-robin with it, not after it.
func TestStarterIsFairAcrossSessions(t *testing.T) {
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return time.Millisecond }}
	s, _ := newStarter(t, f, &starter.Limit{Min: 1, Max: 1, Initial: 1})
	// Hold the starter's only slot while both queues fill.
	block := make(chan struct{})
	f.mu.Lock()
	f.latency = func(int) time.Duration { <-block; return time.Millisecond }
	f.mu.Unlock()
	require.True(t, s.Offer(req(9, 0)))
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.latency = func(int) time.Duration { return time.Millisecond }
	f.mu.Unlock()
	for i := 0; i < 100; i++ {
		require.True(t, s.Offer(req(1, i)))
	}
	for i := 0; i < 10; i++ {
		require.True(t, s.Offer(req(2, i)))
	}
	require.True(t, s.Offer(req(2, 0)), "an order already queued is accepted, not queued twice")
	close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.True(t, s.Drain(ctx))
	require.Len(t, f.started, 111)
	// Session 2's ten starts are all among the first 21 (alternating).
	f.mu.Lock()
	defer f.mu.Unlock()
	small := 0
	for _, id := range f.order[1:22] {
		if id == 2 {
			small++
		}
	}
	require.Equal(t, 10, small, "order: %v", f.order[:30])
}

// The queue is bounded: past it, Offer refuses at once (the caller's
// order waits in the outbox) and never blocks.
func TestOfferNeverBlocks(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { <-block; return 0 }}
	g := &fakeGate{cleared: map[string]bool{}}
	s := starter.New(starter.Config{Flow: f, Gate: g, Queue: 10})
	for i := 0; i < 10; i++ {
		require.True(t, s.Offer(req(1, i)))
	}
	done := make(chan bool)
	go func() { done <- s.Offer(req(1, 10)) }()
	select {
	case ok := <-done:
		require.False(t, ok)
	case <-time.After(time.Second):
		t.Fatal("Offer blocked on a full queue")
	}
	require.Equal(t, 10, s.Queued())
	require.True(t, s.Holds("1-3"))
}

// holdGate records what a starter holds.
type holdGate struct {
	fakeGate
	mu   sync.Mutex
	held map[string]int // order number → renewals
}

func (g *holdGate) Hold(_ context.Context, _ int64, nos []string, _ time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, no := range nos {
		g.held[no]++
	}
	return nil
}

// A starter renews the pending-start entries of the orders it holds,
// queued or in flight, so that the worker's relay leaves them to it; the
// orders it has started are no longer renewed.
func TestStarterHoldsWhatItHolds(t *testing.T) {
	release := make(chan struct{})
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 },
		fail: func(*seckill.OrderRequest) error { <-release; return nil }}
	g := &holdGate{fakeGate: fakeGate{cleared: map[string]bool{}}, held: map[string]int{}}
	s := starter.New(starter.Config{Flow: f, Gate: g, Limit: &starter.Limit{Min: 1, Max: 1, Initial: 1},
		HoldEvery: 20 * time.Millisecond, CallTimeout: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	for i := 0; i < 3; i++ {
		require.True(t, s.Offer(req(1, i)))
	}
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.held["1-0"] > 1 && g.held["1-1"] > 1 && g.held["1-2"] > 1
	}, 5*time.Second, 10*time.Millisecond, "the one in flight and the two queued are renewed")
	close(release)
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	require.True(t, s.Drain(dctx))
	g.mu.Lock()
	before := g.held["1-0"]
	g.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Equal(t, before, g.held["1-0"], "started: no longer renewed")
}

// While the front door is busy the starter holds new starts, and sends
// them as soon as it is quiet again; a front door that stays busy holds
// each order at most Yield, so starts are delayed, never starved.
func TestStarterYieldsToABusyFrontDoor(t *testing.T) {
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 }}
	var busy atomic.Bool
	busy.Store(true)
	m := metrics.New()
	s := starter.New(starter.Config{Flow: f, Gate: &fakeGate{cleared: map[string]bool{}}, CallTimeout: time.Second,
		Busy: busy.Load, Yield: time.Hour, Metrics: m, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	for i := 0; i < 50; i++ {
		require.True(t, s.Offer(req(1, i)))
	}
	time.Sleep(100 * time.Millisecond)
	require.Zero(t, f.count(), "nothing starts while the front door is busy")
	require.Equal(t, 50, s.Queued())
	require.Equal(t, 1.0, testutil.ToFloat64(m.StarterYielding.WithLabelValues("api")), "ops see why the queue grows")
	busy.Store(false)
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	require.True(t, s.Drain(dctx), "quiet again: everything starts")
	require.Equal(t, 50, f.count())
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.StarterYielding.WithLabelValues("api")) == 0 },
		time.Second, 10*time.Millisecond)

	// The front door stays busy: each order waits out its Yield, then starts.
	f2 := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 }}
	s2 := starter.New(starter.Config{Flow: f2, Gate: &fakeGate{cleared: map[string]bool{}}, CallTimeout: time.Second,
		Busy: func() bool { return true }, Yield: 300 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go s2.Run(ctx)
	offered := time.Now()
	for i := 0; i < 50; i++ {
		require.True(t, s2.Offer(req(2, i)))
	}
	require.True(t, s2.Drain(dctx), "a front door that stays busy delays starts, never starves them")
	require.GreaterOrEqual(t, time.Since(offered), 300*time.Millisecond)
	require.Equal(t, 50, f2.count())

	// Yield < 0: no yield at all. The drain gets a third of the default
	// Yield, which a held start would outlast.
	f3 := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 }}
	s3 := starter.New(starter.Config{Flow: f3, Gate: &fakeGate{cleared: map[string]bool{}}, CallTimeout: time.Second,
		Busy: func() bool { return true }, Yield: -1, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	go s3.Run(ctx)
	for i := 0; i < 50; i++ {
		require.True(t, s3.Offer(req(3, i)))
	}
	qctx, qcancel := context.WithTimeout(ctx, starter.DefaultYield/3)
	defer qcancel()
	require.True(t, s3.Drain(qctx), "no yield: started at once")
	require.Equal(t, 50, f3.count())
}

// A burst's first winners are queued before the front door can tell a
// burst from a trickle: with Settle, their starts wait until it can, and
// then for the burst to be answered. Without it they go out at once.
func TestStarterSettlesBeforeAskingTheFrontDoor(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	burst := func(settle time.Duration) (*fakeFlow, *starter.Starter, *atomic.Bool) {
		f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 }}
		var busy atomic.Bool // the door has not sampled the burst yet
		s := starter.New(starter.Config{Flow: f, Gate: &fakeGate{cleared: map[string]bool{}}, CallTimeout: time.Second,
			Busy: busy.Load, Yield: time.Hour, Settle: settle, Log: quiet})
		go s.Run(ctx)
		for i := 0; i < 50; i++ {
			require.True(t, s.Offer(req(1, i)))
		}
		time.Sleep(40 * time.Millisecond)
		busy.Store(true) // the door's first sample sees the burst
		time.Sleep(200 * time.Millisecond)
		return f, s, &busy
	}

	f, s, busy := burst(time.Second)
	require.Zero(t, f.count(), "no start before the door could see the burst, none while it is busy")
	busy.Store(false)
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	require.True(t, s.Drain(dctx), "the burst answered: everything starts")
	require.Equal(t, 50, f.count())

	f0, _, _ := burst(0)
	require.Positive(t, f0.count(), "without Settle the first winners start in the burst's first instants")

	// A lone order on a quiet door starts once it has settled.
	f1 := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return 0 }}
	s1 := starter.New(starter.Config{Flow: f1, Gate: &fakeGate{cleared: map[string]bool{}}, CallTimeout: time.Second,
		Busy: func() bool { return false }, Settle: 100 * time.Millisecond, Log: quiet})
	go s1.Run(ctx)
	offered := time.Now()
	require.True(t, s1.Offer(req(2, 0)))
	require.True(t, s1.Drain(dctx))
	require.GreaterOrEqual(t, time.Since(offered), 100*time.Millisecond)
	require.Equal(t, 1, f1.count())
}

// A starter whose starts all time out (Temporal unreachable from this
// process) renews its holds for at most HoldEvery, then lets go, even
// though the outbox keeps handing it the same orders: their entries age
// until the worker's relay takes them.
func TestStalledStarterLetsGo(t *testing.T) {
	f := &fakeFlow{started: map[string]int{}, latency: func(int) time.Duration { return time.Hour }}
	g := &holdGate{fakeGate: fakeGate{cleared: map[string]bool{}}, held: map[string]int{}}
	s := starter.New(starter.Config{Flow: f, Gate: g, HoldEvery: 50 * time.Millisecond, CallTimeout: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	renewals := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.held["1-0"]
	}
	// The outbox relay hands the order over again after each failure.
	go func() {
		for ctx.Err() == nil {
			s.Do(ctx, []*seckill.OrderRequest{req(1, 0)})
		}
	}()
	time.Sleep(300 * time.Millisecond)
	before := renewals()
	require.LessOrEqual(t, before, 2, "renewed while no start succeeded for HoldEvery")
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, before, renewals(), "a stalled starter renews nothing")
}
