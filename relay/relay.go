// Package relay closes the gap between the admission script and the
// workflow start: the script writes each reservation with a pending-start
// entry in the same atomic step (the outbox), and the relay starts the
// workflow of every entry older than a few seconds. The workflow ID is the
// order number, so a start that already happened is recognised, never
// repeated. A reservation that can never become an order (its session is
// gone) is released back to stock.
package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
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

// Relay starts the workflows that the API did not.
type Relay struct {
	Gate    Gate
	Store   Store
	Starter Starter
	// PayTimeout is handed to the workflows the relay starts.
	PayTimeout time.Duration
	// MinAge leaves fresh entries to the API, whose own start is still
	// running (it clears the entry when done).
	MinAge time.Duration
	// Batch bounds the entries handled per session and tick.
	Batch int
	Log   *slog.Logger
	// Metrics counts what each pass did (seckill_relay_actions_total); optional.
	Metrics *metrics.Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Stats is what one pass did.
type Stats struct {
	Started  int // workflows the relay started
	Existed  int // entries whose workflow already existed (the API's start had worked)
	Released int // reservations given back: they could never become orders
	Failed   int // starts that failed; retried on the next pass
}

// Run makes a pass every interval until ctx ends.
func (r *Relay) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		st, err := r.Pass(ctx)
		if r.Metrics != nil {
			for action, n := range map[string]int{"started": st.Started, "existed": st.Existed, "released": st.Released, "failed": st.Failed} {
				r.Metrics.RelayActions.WithLabelValues("starts", action).Add(float64(n))
			}
		}
		if err != nil {
			r.Log.Warn("relay pass failed", "error", err)
		} else if st != (Stats{}) {
			r.Log.Info("relay pass", "started", st.Started, "existed", st.Existed, "released", st.Released, "failed", st.Failed)
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
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	ids, err := r.Gate.Sessions(ctx)
	if err != nil {
		return st, err
	}
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
			req := &seckill.OrderRequest{Reservation: p, SKUID: sess.SKUID, PriceCents: sess.PriceCents, PayTimeout: r.PayTimeout}
			started, err := r.Starter.Start(ctx, req)
			if err != nil {
				st.Failed++
				r.Log.Warn("relay: start failed", "order_no", p.OrderNo, "trace_id", p.TraceID, "error", err)
				continue
			}
			if started {
				st.Started++
				r.Log.Info("relay started a workflow the API did not", "order_no", p.OrderNo, "trace_id", p.TraceID)
			} else {
				st.Existed++
			}
			if err := r.Gate.Started(ctx, id, p.OrderNo); err != nil {
				return st, err
			}
		}
	}
	return st, nil
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
