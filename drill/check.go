package drill

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/seckill/seckill"
)

// check holds the answers against MySQL, waits for the releases to finish
// and reads the reconcile report.
func (r *runner) check(ctx context.Context, attempts []*attempt) error {
	if r.cfg.Owners != nil {
		owners, err := r.cfg.Owners(ctx, r.res.SessionID)
		if err != nil {
			return fmt.Errorf("read the orders in MySQL: %w", err)
		}
		r.res.Orders = len(owners)
		told := map[string]int64{}
		for _, a := range attempts {
			if a.final.status == http.StatusAccepted && a.final.orderNo != "" {
				told[a.final.orderNo] = a.user
				switch owner, ok := owners[a.final.orderNo]; {
				case !ok:
					r.problem("202 %s to user %d has no order row", a.final.orderNo, a.user)
				case owner != a.user:
					r.problem("202 %s to user %d: the row belongs to user %d", a.final.orderNo, a.user, owner)
				}
			}
		}
		for _, a := range attempts {
			// An order made by a replay was told then (and the changed
			// answer is already reported).
			if a.replay.status == http.StatusAccepted && a.replay.orderNo != "" {
				told[a.replay.orderNo] = a.user
			}
		}
		for no, user := range owners {
			if _, ok := told[no]; !ok {
				r.problem("order %s of user %d was never answered 202: a unit held for a shopper told otherwise", no, user)
			}
		}
	}

	rep, err := Reconcile(ctx, r.cfg, r.res.SessionID)
	if err != nil {
		return err
	}
	r.res.Report = rep
	if !rep.OK {
		r.problem("reconcile: %v", rep.Problems)
	}
	if rep.InFlight != 0 {
		r.problem("%d reservations still in flight", rep.InFlight)
	}
	if got := rep.Orders[seckill.StatusPaid]; got != r.res.Paid {
		r.problem("%d PAID orders, %d paid", got, r.res.Paid)
	}
	closed := rep.Orders[seckill.StatusClosed] + rep.Orders[seckill.StatusRefundPending] + rep.Orders[seckill.StatusRefunded]
	if want := r.res.Accepted - r.res.Paid; closed != want {
		r.problem("%d closed orders, %d accepted and not paid", closed, want)
	}
	if got, want := rep.DBStock, r.cfg.Stock-r.res.Paid; got != want {
		r.problem("db_stock %d, want %d", got, want)
	}
	if got, want := rep.RedisStock, r.cfg.Stock-r.res.Paid; got != want {
		r.problem("redis_stock %d, want %d", got, want)
	}
	return nil
}

// Reconcile reads a session's reconcile report through the admin API of
// cfg's stack, retrying while the API is unreachable or answers 503 and
// while reservations are in flight, up to cfg.Settle (a soak checks every
// session once its faults are over).
func Reconcile(ctx context.Context, cfg Config, sessionID int64) (*seckill.Report, error) {
	r := newRunner(cfg)
	deadline := time.Now().Add(r.cfg.Settle)
	for {
		rep, err := r.api.Reconcile(ctx, sessionID)
		if err == nil && (rep.InFlight == 0 || time.Now().After(deadline)) {
			return rep, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reconcile session %d: %w", sessionID, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
