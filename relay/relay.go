// Package relay closes the gap between the admission script and the
// workflow start: the script writes each reservation with a pending-start
// entry in the same atomic step (the outbox), and the relay starts the
// workflow of every entry older than MinAge. The API runs one over the
// outbox with a short MinAge (winners whose handoff to its starter was
// dropped, or whose API died); the worker runs one with a long MinAge as
// the safety net. Both start through a starter.Starter: adaptive
// concurrency, many starts in flight, fair across sessions. The workflow
// ID is the order number, so a start that already happened is recognised,
// never repeated. A reservation that can never become an order (its
// session is gone) is released back to stock.
package relay

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/temporal/starter"
)

// Gate is the Redis side of the relay.
type Gate interface {
	Sessions(ctx context.Context) ([]int64, error)
	Pending(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error)
	Started(ctx context.Context, sessionID int64, orderNo string) error
	Release(ctx context.Context, sessionID int64, orderNo string) (int, error)
}

// Store reads the session a reservation belongs to.
type Store interface {
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
}

// Starter starts an order's workflow; started is false when it existed.
type Starter interface {
	Start(ctx context.Context, req *seckill.OrderRequest) (started bool, err error)
}

// DefaultMinAge is the worker's relay's MinAge (SECKILL_RELAY_MIN_AGE's
// default): long enough that the APIs' starters and outbox relays (3 s)
// have had their turn, so the safety net does not race them.
const DefaultMinAge = 30 * time.Second

// Relay starts the workflows that the API did not.
type Relay struct {
	Gate  Gate
	Store Store
	// Starts runs the starts (adaptive, concurrent, fair across sessions);
	// when nil, the first pass builds one over Starter and runs it until
	// the process ends.
	Starts  *starter.Starter
	Starter Starter
	// PayTimeout is handed to the workflows the relay starts.
	PayTimeout time.Duration
	// MinAge leaves fresh entries to the API, whose own start is still
	// running (it clears the entry when done).
	MinAge time.Duration
	// Batch bounds the entries handled per session and tick.
	Batch int
	// When, if set, gates each pass of Run: the API's outbox relay only
	// runs while its own starter has nothing queued, so it drains its own
	// winners before it helps with entries another API may still hold.
	When func() bool
	Log  *slog.Logger
	// Metrics counts what each pass did (seckill_relay_actions_total); optional.
	Metrics *metrics.Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	once sync.Once
}

// Stats is what one pass did.
type Stats struct {
	Started  int // workflows the relay started
	Existed  int // entries whose workflow already existed (the API's start had worked)
	Released int // reservations given back: they could never become orders
	Failed   int // starts that failed; retried on the next pass
	Busy     int // entries this process's starter already holds (queued or in flight)
}

// Run makes a pass every interval until ctx ends.
func (r *Relay) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		if r.When != nil && !r.When() {
			return
		}
		st, err := r.Pass(ctx)
		if r.Metrics != nil {
			for action, n := range map[string]int{"started": st.Started, "existed": st.Existed, "released": st.Released, "failed": st.Failed, "busy": st.Busy} {
				r.Metrics.RelayActions.WithLabelValues("starts", action).Add(float64(n))
			}
		}
		if err != nil {
			r.Log.Warn("relay pass failed", "error", err)
		} else if st != (Stats{Busy: st.Busy}) {
			r.Log.Info("relay pass", "started", st.Started, "existed", st.Existed, "released", st.Released, "failed", st.Failed, "busy", st.Busy)
		}
	})
}

// Pass handles every pending-start entry older than MinAge once.
func (r *Relay) Pass(ctx context.Context) (Stats, error) {
	var st Stats
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	batch := cmp.Or(r.Batch, 500)
	ids, err := r.Gate.Sessions(ctx)
	if err != nil {
		return st, err
	}
	var reqs []*seckill.OrderRequest
	for _, id := range ids {
		pending, err := r.Gate.Pending(ctx, id, now().Add(-r.MinAge), batch)
		if err != nil {
			return st, err
		}
		if len(pending) == 0 {
			continue
		}
		sess, _, err := r.Store.Session(ctx, id)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			for _, p := range pending {
				if err := r.release(ctx, p); err != nil {
					return st, err
				}
				st.Released++
			}
			continue
		} else if err != nil {
			return st, err
		}
		for _, p := range pending {
			reqs = append(reqs, seckill.NewOrderRequest(p, sess, r.PayTimeout))
		}
	}
	if len(reqs) == 0 {
		return st, nil
	}
	for i, res := range r.starts().Do(ctx, reqs) {
		p := reqs[i]
		switch {
		case res.Busy:
			st.Busy++
		case res.Err != nil:
			st.Failed++
		case res.Started:
			st.Started++
			r.Log.Info("relay started a workflow the API did not", "order_no", p.OrderNo, "trace_id", p.TraceID)
		default:
			st.Existed++
		}
	}
	return st, nil
}

// starts returns the starter of the relay, building one over Starter at
// the first pass when none was given.
func (r *Relay) starts() *starter.Starter {
	r.once.Do(func() {
		if r.Starts == nil {
			r.Starts = starter.New(starter.Config{Flow: r.Starter, Gate: r.Gate, Name: "relay", Log: r.Log, Metrics: r.Metrics})
			go r.Starts.Run(context.Background())
		}
	})
	return r.Starts
}

// release gives back a reservation that can never become an order; the
// release script removes its pending-start entry in the same atomic step.
func (r *Relay) release(ctx context.Context, p seckill.Reservation) error {
	n, err := r.Gate.Release(ctx, p.SessionID, p.OrderNo)
	if err == nil {
		r.Log.Warn("relay released a reservation of an unknown session", "order_no", p.OrderNo, "units", n)
	}
	return err
}
