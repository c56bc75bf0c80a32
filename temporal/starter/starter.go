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
	"log/slog"
	"sync"
	"time"

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
