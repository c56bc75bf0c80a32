package redis

import (
	"context"
	"encoding/json"
	"time"

	"github.com/seckill/seckill"
)

// Unsettled returns up to limit reservations of a session made before
// before that may still wait for their order row (QUEUED) or for their
// release: every old reservation except those whose cached order view
// shows an order that keeps its reservation (PAID, FAILED, WAIT_PAY not
// yet past its deadline). The cached view only narrows the search; the
// sweep checks each candidate against MySQL and Temporal. HSCAN walks the
// reservations in pages, so a big session never blocks Redis.
func (g *Gate) Unsettled(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error) {
	k := g.keys(sessionID)
	var out []seckill.Reservation
	var cursor uint64
	for {
		var page []string
		var next uint64
		err := retry(ctx, func(ctx context.Context) error {
			var err error
			page, next, err = g.rdb.HScan(ctx, k.resv, cursor, "", 500).Result()
			return err
		})
		if err != nil {
			return nil, unavailable(err)
		}
		var old []seckill.Reservation
		for i := 0; i+1 < len(page); i += 2 {
			r, err := parseReservation(sessionID, page[i], page[i+1])
			if err != nil {
				return nil, err
			}
			if r.ReservedAt.Before(before) {
				old = append(old, *r)
			}
		}
		if len(old) > 0 {
			nos := make([]string, len(old))
			for i, r := range old {
				nos[i] = r.OrderNo
			}
			views, err := idempotent(ctx, func(ctx context.Context) ([]any, error) {
				return g.rdb.HMGet(ctx, k.orders, nos...).Result()
			})
			if err != nil {
				return nil, unavailable(err)
			}
			for i, r := range old {
				if settled(views[i], before) {
					continue
				}
				out = append(out, r)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// settled tells whether a cached order view shows an order that keeps its
// reservation for now.
func settled(view any, before time.Time) bool {
	s, ok := view.(string)
	if !ok {
		return false // no row yet, as far as the cache knows
	}
	var v orderView
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return false
	}
	switch v.Status {
	case seckill.StatusPaid, seckill.StatusFailed:
		return true
	case seckill.StatusWaitPay:
		return v.PayDeadline.After(before)
	default:
		return false
	}
}
