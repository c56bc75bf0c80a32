// Package sweep closes the orders nothing else will: WAIT_PAY orders past
// their pay deadline and reservations past the pay timeout (never created,
// or closed but never released) whose workflow is not running — terminated,
// failed, or lost with an in-memory Temporal server. It runs in `seckill
// worker` every few seconds and closes each such order exactly as its
// workflow would have (the same activities' code, compare-and-set and
// idempotent on the order number), so a workflow that comes back later
// finds nothing left to give back. It also gives back in Redis the units
// of operator refunds whose release failed after MySQL committed them.
package sweep

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"go.temporal.io/sdk/log"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
)

// Reason is the close reason the sweep records on the order and its ledger row.
const Reason = "swept_workflow_lost"

// Store is the MySQL side of the sweep.
type Store interface {
	OverdueOrders(ctx context.Context, before time.Time, limit int) ([]*seckill.Order, error)
	OrderStatuses(ctx context.Context, orderNos []string) (map[string]seckill.Status, error)
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
	OperatorRefundsPending(ctx context.Context, limit int) ([]*seckill.Order, error)
}

// Gate is the Redis side of the sweep.
type Gate interface {
	Sessions(ctx context.Context) ([]int64, error)
	Unsettled(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error)
	Release(ctx context.Context, sessionID int64, orderNo string) (int, error)
}

// Workflows tells whether an order's workflow is running.
type Workflows interface {
	Running(ctx context.Context, orderNo string) (bool, error)
}

// Steps are the order workflow's steps the sweep runs itself
// (activities.Activities): the compensation, and the refresh of an order's
// cached view.
type Steps interface {
	CloseLost(ctx context.Context, l log.Logger, in activities.CloseOrderInput) (activities.CloseOrderResult, int, error)
	RefreshView(ctx context.Context, l log.Logger, orderNo string) error
}

// Sweep finds and closes stuck orders.
type Sweep struct {
	Store     Store
	Gate      Gate
	Workflows Workflows
	Steps     Steps
	// PayTimeout is the pay timeout orders are given (SECKILL_PAY_TIMEOUT):
	// a reservation older than PayTimeout + Grace should have settled.
	PayTimeout time.Duration
	// Grace is how long past its deadline an order is left to its workflow
	// (SECKILL_SWEEP_GRACE).
	Grace time.Duration
	// Batch bounds the orders looked at per pass (Temporal describes and
	// closes); the rest waits for the next pass.
	Batch int
	Log   *slog.Logger
	// Metrics counts what each pass did (seckill_sweep_actions_total); optional.
	Metrics *metrics.Metrics
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Stats is what one pass did.
type Stats struct {
	Closed   int // WAIT_PAY orders closed, stock back in both stores
	Queued   int // reservations that never became an order, closed and released
	Released int // closed or operator-refunded orders whose Redis release had not run, released
	Running  int // past their deadline, but their workflow runs: left alone
	// Refreshed counts settled orders (paid, waiting, failed) found with
	// no cached view, e.g. after Redis was rebuilt from MySQL: their view
	// is cached again so that the next passes skip them.
	Refreshed int
	Failed    int // Temporal could not tell, or a step failed; next pass
}

// Run makes a pass every interval until ctx ends.
func (s *Sweep) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		st, err := s.Pass(ctx)
		if s.Metrics != nil {
			for action, n := range map[string]int{"closed": st.Closed, "queued": st.Queued, "released": st.Released,
				"running": st.Running, "refreshed": st.Refreshed, "failed": st.Failed} {
				s.Metrics.SweepActions.WithLabelValues(action).Add(float64(n))
			}
		}
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("sweep pass failed", "error", err)
		} else if st != (Stats{}) {
			s.Log.Info("sweep pass", "closed", st.Closed, "queued", st.Queued, "released", st.Released,
				"running", st.Running, "refreshed", st.Refreshed, "failed", st.Failed)
		}
	})
}

// Pass looks at up to Batch stuck orders once: the WAIT_PAY orders past
// their deadline + Grace first (oldest first), then the reservations older
// than PayTimeout + Grace with no order row or no release yet.
func (s *Sweep) Pass(ctx context.Context) (Stats, error) {
	var st Stats
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	budget := cmp.Or(s.Batch, 100)
	t := now()
	overdue, err := s.Store.OverdueOrders(ctx, t.Add(-s.Grace), budget)
	if err != nil {
		return st, err
	}
	for _, o := range overdue {
		s.settle(ctx, *o.Request(), seckill.StatusWaitPay, &st)
	}
	budget -= len(overdue)
	if budget <= 0 {
		return st, nil
	}
	ids, err := s.Gate.Sessions(ctx)
	if err != nil {
		return st, err
	}
	if err := s.releaseRefunded(ctx, ids, budget, &st); err != nil {
		return st, err
	}
	for _, id := range ids {
		if budget <= 0 {
			break
		}
		old, err := s.Gate.Unsettled(ctx, id, t.Add(-s.PayTimeout-s.Grace), budget)
		if err != nil {
			return st, err
		}
		if len(old) == 0 {
			continue
		}
		nos := make([]string, len(old))
		for i, r := range old {
			nos[i] = r.OrderNo
		}
		statuses, err := s.Store.OrderStatuses(ctx, nos)
		if err != nil {
			return st, err
		}
		var sess *seckill.Session
		for _, r := range old {
			budget--
			status, ok := statuses[r.OrderNo]
			switch {
			case !ok:
				status = seckill.StatusQueued
			case status == seckill.StatusClosed, status == seckill.StatusRefundPending, status == seckill.StatusRefunded:
			default:
				// Keeps its reservation: holds stock (a WAIT_PAY past its
				// deadline is the overdue query's) or FAILED (drift: repair,
				// not sweep). Its cached view was missing or stale.
				if err := s.Steps.RefreshView(ctx, log.NewStructuredLogger(s.Log.With("order_no", r.OrderNo, "trace_id", r.TraceID)), r.OrderNo); err != nil {
					st.Failed++
				} else {
					st.Refreshed++
				}
				continue
			}
			if sess == nil {
				// The order row a close may have to write (a tombstone)
				// carries the session's SKU and price.
				if sess, _, err = s.Store.Session(ctx, id); seckill.ErrorCode(err) == seckill.ENOTFOUND {
					sess = &seckill.Session{ID: id}
				} else if err != nil {
					return st, err
				}
			}
			s.settle(ctx, *seckill.NewOrderRequest(r, sess, s.PayTimeout), status, &st)
		}
	}
	return st, nil
}

// releaseRefunded gives back in Redis the units of operator refunds of
// the preheated sessions (ids) whose release never ran: the refund
// committed in MySQL, then Redis failed (the API answered an error that
// nobody retried) or the API died. Their cached view still says PAID, so
// the scan of unsettled reservations skips them; MySQL names them. The
// release script's guard keeps it exactly once with the API's own release
// and the refund's MarkRefunded step, whichever runs first.
func (s *Sweep) releaseRefunded(ctx context.Context, ids []int64, budget int, st *Stats) error {
	refunds, err := s.Store.OperatorRefundsPending(ctx, budget)
	if err != nil {
		return err
	}
	for _, o := range refunds {
		if !slices.Contains(ids, o.SessionID) {
			continue // retired: its units are not for sale any more
		}
		l := s.Log.With("order_no", o.OrderNo, "trace_id", o.TraceID, "session_id", o.SessionID, "status", o.Status)
		n, err := s.Gate.Release(ctx, o.SessionID, o.OrderNo)
		if err != nil {
			st.Failed++
			l.Warn("sweep: releasing a refunded order failed; retried on the next pass", "error", err)
			continue
		}
		if n == 0 {
			continue // released already: the usual case
		}
		st.Released++
		l.Warn("sweep released the units of an operator's refund that Redis had not taken back", "redis_units", n)
		if err := s.Steps.RefreshView(ctx, log.NewStructuredLogger(l), o.OrderNo); err != nil {
			st.Failed++
		}
	}
	return nil
}

// settle closes one stuck order unless its workflow runs.
func (s *Sweep) settle(ctx context.Context, req seckill.OrderRequest, was seckill.Status, st *Stats) {
	l := s.Log.With("order_no", req.OrderNo, "trace_id", req.TraceID, "session_id", req.SessionID, "status", was)
	running, err := s.Workflows.Running(ctx, req.OrderNo)
	if err != nil {
		st.Failed++
		l.Warn("sweep: cannot tell whether the workflow runs; left for the next pass", "error", err)
		return
	}
	if running {
		// The workflow will close it (its timer is late: a busy or
		// stopped worker). Never race a live workflow.
		st.Running++
		return
	}
	in := activities.CloseOrderInput{Request: req, Reason: Reason}
	if was == seckill.StatusWaitPay {
		// Asked like the workflow's close asks, from the moment the sweep
		// could first close it: the provider's grace runs from there.
		in.AskedAt = req.PayBy.Add(s.Grace)
	}
	closed, released, err := s.Steps.CloseLost(ctx, log.NewStructuredLogger(l), in)
	if err != nil {
		st.Failed++
		l.Warn("sweep: close failed; retried on the next pass", "error", err)
		return
	}
	switch {
	case was == seckill.StatusWaitPay && closed.GaveBack:
		st.Closed++
	case was == seckill.StatusQueued:
		st.Queued++
	case released > 0:
		st.Released++
	default:
		// A workflow (or another worker's sweep) settled it meanwhile.
		l.Info("sweep: already settled", "now", closed.Status)
		return
	}
	l.Warn("sweep closed an order whose workflow is not running", "reason", Reason,
		"now", closed.Status, "mysql_gave_back", closed.GaveBack, "redis_units", released)
}
