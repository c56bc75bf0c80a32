// Package starter holds the workflow starts of one process: the queue of
// orders whose workflow is still to be started, and the adaptive limit on
// starts in flight (see Limit). The API hands each winner to it after
// answering (Offer: never blocks, a full queue leaves the order to the
// pending-start outbox), and the relays hand it what they find in the
// outbox (Do). It drains round-robin across sessions, so one big sale does
// not starve a small one, with as many starts in flight as the Temporal
// frontend answers quickly; it clears the order's pending-start entry once
// the start is confirmed (an "already started" is a confirmation: the
// workflow ID is the order number, so a start is never doubled).
//
// It lives under temporal/ because it is the client side of starting
// workflows: it paces StartWorkflow calls by Temporal's latency and reads
// Temporal's errors (already started, overloaded). The API and the relays
// use it without knowing either.
package starter

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/metrics"
)

// Flow starts an order's workflow; started is false when it existed.
type Flow interface {
	Start(ctx context.Context, req *seckill.OrderRequest) (started bool, err error)
}

// Gate clears an order's pending-start entry once its start is confirmed.
type Gate interface {
	Started(ctx context.Context, sessionID int64, orderNo string) error
}

// Holder renews the pending-start entries of the orders a starter holds
// (queued or in flight) as of at, so that another process's relay, which
// starts only entries older than its minimum age, leaves them to this
// starter. Without it, a backlog that takes longer than the worker relay's
// minimum age to drain is started a second time by the relay, through the
// task queue and in competition with this starter, and those orders' first
// workflow tasks wait in the task queue instead of coming straight back
// (docs/BENCHMARKS.md).
// A Gate that implements it is renewed every Config.HoldEvery; the
// renewal only touches entries that still exist, so it never brings a
// started order back. A starter that is making no progress (its starts
// fail, none has succeeded for HoldEvery) renews nothing: its orders age
// in the outbox until the worker's relay, which may well reach Temporal
// when this process cannot, takes them.
type Holder interface {
	Hold(ctx context.Context, sessionID int64, orderNos []string, at time.Time) error
}

// Defaults of a Starter.
const (
	DefaultQueue       = 20000
	DefaultCallTimeout = 5 * time.Second
	// DefaultHoldEvery is how often a starter renews what it holds: well
	// within the worker relay's minimum age (30 s by default).
	DefaultHoldEvery = 5 * time.Second
	// DefaultYield is how long an order may wait for a busy front door
	// (Config.Busy) before its start goes out anyway.
	DefaultYield = 3 * time.Second
	// yieldPoll is how often a yielding starter looks at the front door
	// again.
	yieldPoll = 10 * time.Millisecond
)

// Config builds a Starter.
type Config struct {
	Flow Flow
	Gate Gate
	// Queue bounds the orders waiting in memory (DefaultQueue); Offer
	// refuses past it and the order waits in the outbox instead.
	Queue int
	// CallTimeout is the deadline of one StartWorkflow call
	// (DefaultCallTimeout). Past it the start counts as a timeout (the
	// limit halves) and the order stays in the outbox for a later pass.
	CallTimeout time.Duration
	// Limit tunes the adaptive concurrency (zero values: its defaults).
	Limit *Limit
	// HoldEvery is how often the orders held here are renewed when Gate
	// is a Holder (DefaultHoldEvery).
	HoldEvery time.Duration
	// Busy, when set, tells whether the process's front door is busy: a
	// burst of shoppers is being answered. While it is, the starter sends
	// no new start until the oldest order it holds has waited Yield: the
	// front door comes first. Starting an order takes CPU in this process
	// (with eager start, its first workflow task and the CreateOrder
	// transaction run here) and in the Temporal server; spent during the
	// burst, it is taken from the shoppers still waiting for an answer,
	// 99% of whom will lose. Spent right after, it is the same work: the
	// last order is created about as late (the CPU was saturated either
	// way), the burst is answered sooner, and no shopper notices: the 202
	// is the promise, the order is payable while QUEUED, and its pay
	// deadline counts from the 202. Yield bounds the wait, so a front
	// door that stays busy (a long sale's steady traffic) delays starts by
	// at most Yield and never starves them.
	Busy func() bool
	// Yield bounds how long an order waits for a busy front door
	// (DefaultYield; negative: never wait).
	Yield time.Duration
	// Settle, with Busy, is how long a start waits after its order was
	// queued before Busy is asked (0: not at all). A burst's first winners
	// are queued before the front door can tell a burst from a trickle (a
	// rate needs a sample or two); without it their starts went out in the
	// burst's first instants, on the CPU their own shoppers' answers
	// needed. Negative Yield turns it off too.
	Settle time.Duration
	// Name labels the starter's metrics ("api", "relay").
	Name    string
	Log     *slog.Logger
	Metrics *metrics.Metrics
}

// Result is what became of one start.
type Result struct {
	Started bool  // this call created the workflow
	Existed bool  // the workflow already existed: a confirmed start too
	Busy    bool  // the order was already queued or in flight here: not started twice
	Err     error // the start failed; the order stays in the outbox
}

type item struct {
	req  *seckill.OrderRequest
	done func(Result) // nil for handoffs
	at   time.Time    // when it was queued
}

// Starter drains workflow starts with adaptive concurrency.
type Starter struct {
	cfg   Config
	limit *Limit

	mu       sync.Mutex
	queues   map[int64][]item // per session, FIFO
	ring     []int64          // sessions with queued items, round-robin order
	next     int
	queued   int
	known    map[string]int64 // order numbers queued or in flight, with their session
	inFlight int
	// yielding: the last pass held its starts for the front door.
	yielding bool
	wake     chan struct{}
	// lastSuccess and lastFailure are when a start last succeeded and
	// last failed (lastSuccess starts at New): whether the starter is
	// making progress (stalledLocked).
	lastSuccess, lastFailure time.Time
	stalled                  bool // the last hold tick found it stalled (logged once per stall)
}

// New returns a Starter; Run drains it.
func New(cfg Config) *Starter {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.Limit == nil {
		cfg.Limit = &Limit{}
	}
	if cfg.HoldEvery <= 0 {
		cfg.HoldEvery = DefaultHoldEvery
	}
	if cfg.Yield == 0 {
		cfg.Yield = DefaultYield
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Name == "" {
		cfg.Name = "api"
	}
	s := &Starter{cfg: cfg, limit: cfg.Limit, queues: map[int64][]item{}, known: map[string]int64{},
		wake: make(chan struct{}, 1), lastSuccess: time.Now()}
	if m := cfg.Metrics; m != nil {
		for _, k := range FailureKinds {
			m.WorkflowStartFailures.WithLabelValues(k)
		}
		m.StarterDropped.WithLabelValues(cfg.Name)
	}
	s.gauges()
	return s
}

// Limit is the starter's adaptive limit.
func (s *Starter) Limit() *Limit { return s.limit }

// Offer hands an order over without waiting: false when the queue is full
// (the order's pending-start entry is its way to a start). An order
// already queued or in flight here is accepted and not queued twice.
func (s *Starter) Offer(req *seckill.OrderRequest) bool {
	s.mu.Lock()
	if _, ok := s.known[req.OrderNo]; ok {
		s.mu.Unlock()
		return true
	}
	if s.queued >= s.cfg.Queue {
		s.mu.Unlock()
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.StarterDropped.WithLabelValues(s.cfg.Name).Inc()
		}
		return false
	}
	s.pushLocked(item{req: req})
	s.mu.Unlock()
	s.signal()
	return true
}

// Do starts the given orders through the queue (fairly with everything
// else queued, past the queue bound: the caller holds them anyway) and
// waits for their results, in order, until ctx ends (an order not
// finished by then reports ctx's error; its start still goes on).
func (s *Starter) Do(ctx context.Context, reqs []*seckill.OrderRequest) []Result {
	out := make([]Result, len(reqs))
	results := make(chan struct {
		i int
		r Result
	}, len(reqs))
	waiting := 0
	s.mu.Lock()
	for i, req := range reqs {
		if _, ok := s.known[req.OrderNo]; ok {
			out[i].Busy = true
			continue
		}
		i := i
		s.pushLocked(item{req: req, done: func(r Result) {
			results <- struct {
				i int
				r Result
			}{i, r}
		}})
		waiting++
	}
	s.mu.Unlock()
	s.signal()
	pending := map[int]bool{}
	for i := range reqs {
		if !out[i].Busy {
			pending[i] = true
		}
	}
	for ; waiting > 0; waiting-- {
		select {
		case r := <-results:
			out[r.i] = r.r
			delete(pending, r.i)
		case <-ctx.Done():
			for i := range pending {
				out[i].Err = ctx.Err()
			}
			return out
		}
	}
	return out
}

func (s *Starter) pushLocked(it item) {
	it.at = time.Now()
	id := it.req.SessionID
	if len(s.queues[id]) == 0 {
		s.ring = append(s.ring, id)
	}
	s.queues[id] = append(s.queues[id], it)
	s.known[it.req.OrderNo] = it.req.SessionID
	s.queued++
}

// popLocked takes the next item round-robin across sessions.
func (s *Starter) popLocked() (item, bool) {
	if len(s.ring) == 0 {
		return item{}, false
	}
	if s.next >= len(s.ring) {
		s.next = 0
	}
	id := s.ring[s.next]
	q := s.queues[id]
	it := q[0]
	q[0] = item{}
	q = q[1:]
	if len(q) == 0 {
		delete(s.queues, id)
		s.ring = append(s.ring[:s.next], s.ring[s.next+1:]...)
	} else {
		s.queues[id] = q
		s.next++
	}
	s.queued--
	return it, true
}

func (s *Starter) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Queued is the number of orders waiting in memory; InFlight the starts
// running.
func (s *Starter) Queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued
}

func (s *Starter) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// Holds tells whether an order is queued or in flight here.
func (s *Starter) Holds(orderNo string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.known[orderNo]
	return ok
}

// Run drains the queue until ctx ends; starts in flight then finish on
// their own deadline.
func (s *Starter) Run(ctx context.Context) {
	if h, ok := s.cfg.Gate.(Holder); ok {
		go s.hold(ctx, h)
	}
	again := time.NewTimer(time.Hour)
	again.Stop()
	for {
		s.mu.Lock()
		wait := time.Duration(0)
		s.yielding = false
		for s.inFlight < s.limit.Current() {
			if wait = s.yieldLocked(); wait > 0 {
				break
			}
			it, ok := s.popLocked()
			if !ok {
				break
			}
			s.inFlight++
			n := s.inFlight
			go s.start(it, n)
		}
		s.gaugesLocked()
		s.mu.Unlock()
		if wait > 0 {
			again.Reset(wait)
		}
		select {
		case <-ctx.Done():
			again.Stop()
			return
		case <-s.wake:
		case <-again.C:
		}
		again.Stop()
	}
}

// yieldLocked is how long to hold the next start for a busy front door
// (see Config.Busy and Config.Settle): zero to start now.
func (s *Starter) yieldLocked() time.Duration {
	if s.cfg.Busy == nil || s.cfg.Yield < 0 || s.queued == 0 {
		return 0
	}
	oldest := time.Time{}
	for _, id := range s.ring {
		if at := s.queues[id][0].at; oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	waited := time.Since(oldest)
	if waited < s.cfg.Settle {
		return s.cfg.Settle - waited
	}
	if !s.cfg.Busy() {
		return 0
	}
	left := s.cfg.Yield - waited
	if left <= 0 {
		return 0
	}
	s.yielding = true
	return min(left, yieldPoll)
}

// hold renews, every Config.HoldEvery, the pending-start entries of the orders
// queued or in flight here (see Holder).
func (s *Starter) hold(ctx context.Context, h Holder) {
	t := time.NewTicker(s.cfg.HoldEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s.letGo(now) {
				continue
			}
			for id, nos := range s.held() {
				hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if err := h.Hold(hctx, id, nos, now); err != nil && ctx.Err() == nil {
					s.cfg.Log.Warn("could not renew the pending-start entries held here; the worker's relay may start them too (harmless: already started)",
						"starter", s.cfg.Name, "session_id", id, "orders", len(nos), "error", err)
				}
				cancel()
			}
		}
	}
}

// letGo tells whether the starter is stalled at now: its latest start
// failed and none succeeded for HoldEvery. Its holds are then not renewed
// (see Holder), and the change is logged once each way.
func (s *Starter) letGo(now time.Time) bool {
	s.mu.Lock()
	stalled := s.lastFailure.After(s.lastSuccess) && now.Sub(s.lastSuccess) >= s.cfg.HoldEvery
	changed := stalled != s.stalled
	s.stalled = stalled
	n, last := len(s.known), s.lastSuccess
	s.mu.Unlock()
	switch {
	case changed && stalled:
		s.cfg.Log.Warn("workflow starts are failing here: the orders this process holds are left to the worker's relay",
			"starter", s.cfg.Name, "orders", n, "last_success", last)
	case changed:
		s.cfg.Log.Info("workflow starts succeed again: this process holds its orders again", "starter", s.cfg.Name)
	}
	return stalled
}

// held lists, per session, the orders queued or in flight here.
func (s *Starter) held() map[int64][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64][]string{}
	for no, id := range s.known {
		out[id] = append(out[id], no)
	}
	return out
}

// Drain waits until the queue is empty and no start is in flight, or ctx
// ends (what is left waits in the outbox); false when ctx ended first.
func (s *Starter) Drain(ctx context.Context) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		empty := s.queued == 0 && s.inFlight == 0
		s.mu.Unlock()
		if empty {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// Failure kinds of seckill_workflow_start_failures_total.
const (
	KindTimeout     = "timeout"     // the call's deadline passed
	KindOverloaded  = "overloaded"  // ResourceExhausted: the server sheds load
	KindUnavailable = "unavailable" // Unavailable: the frontend is not reachable
	KindOther       = "other"
)

// FailureKinds lists every kind.
var FailureKinds = []string{KindTimeout, KindOverloaded, KindUnavailable, KindOther}

// Kind classifies a start error; the first three say "slow down".
func Kind(err error) string {
	var re *serviceerror.ResourceExhausted
	var un *serviceerror.Unavailable
	var de *serviceerror.DeadlineExceeded
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &de):
		return KindTimeout
	case errors.As(err, &re):
		return KindOverloaded
	case errors.As(err, &un):
		return KindUnavailable
	}
	return KindOther
}

func (s *Starter) start(it item, inFlight int) {
	req := it.req
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	sent := time.Now()
	started, err := s.cfg.Flow.Start(ctx, req)
	done := time.Now()
	m := s.cfg.Metrics
	if m != nil {
		m.WorkflowStart.Observe(done.Sub(sent).Seconds())
	}
	var res Result
	if err != nil {
		kind := Kind(err)
		if kind != KindOther {
			s.limit.Overloaded(sent, done)
		}
		if m != nil {
			m.WorkflowStartFailures.WithLabelValues(kind).Inc()
		}
		s.cfg.Log.Warn("workflow start failed; the order waits in the outbox for the next pass",
			"starter", s.cfg.Name, "order_no", req.OrderNo, "trace_id", req.TraceID, "kind", kind, "error", err)
		res.Err = err
	} else {
		s.limit.Succeeded(sent, done, inFlight)
		res.Started, res.Existed = started, !started
		gctx, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.cfg.Gate.Started(gctx, req.SessionID, req.OrderNo)
		gcancel()
		if err != nil {
			// Harmless: the next outbox pass meets "already started".
			s.cfg.Log.Warn("could not clear the pending-start entry", "order_no", req.OrderNo, "error", err)
		}
	}
	s.mu.Lock()
	s.inFlight--
	delete(s.known, req.OrderNo)
	if err != nil {
		s.lastFailure = done
	} else {
		s.lastSuccess = done
	}
	s.mu.Unlock()
	if it.done != nil {
		it.done(res)
	}
	s.signal()
}

func (s *Starter) gauges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaugesLocked()
}

func (s *Starter) gaugesLocked() {
	m := s.cfg.Metrics
	if m == nil {
		return
	}
	m.StarterInFlight.WithLabelValues(s.cfg.Name).Set(float64(s.inFlight))
	m.StarterLimit.WithLabelValues(s.cfg.Name).Set(float64(s.limit.Current()))
	m.StarterQueue.WithLabelValues(s.cfg.Name).Set(float64(s.queued))
	yielding := 0.0
	if s.yielding {
		yielding = 1
	}
	m.StarterYielding.WithLabelValues(s.cfg.Name).Set(yielding)
}
