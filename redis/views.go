package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// orderView is how an order view is cached; unlike the API shape it keeps
// the trace id.
type orderView struct {
	seckill.Order
	TraceID string `json:"trace_id"`
}

// PutOrder caches the view of an order after its row changed, so that polls
// need no database. A view older than the cached one (two writers racing,
// e.g. an abandoned activity attempt) is ignored.
func (g *Gate) PutOrder(ctx context.Context, o *seckill.Order) error {
	return g.putOrder(ctx, o, "0")
}

// PutNewOrder is PutOrder for the row as its creation returned it, not
// read back: it also loses a tie with a cached view of the same updated_at,
// which can only be a change made in the same millisecond (a close after
// a cancel) and read from the row.
func (g *Gate) PutNewOrder(ctx context.Context, o *seckill.Order) error {
	return g.putOrder(ctx, o, "1")
}

func (g *Gate) putOrder(ctx context.Context, o *seckill.Order, losesTie string) error {
	b, err := json.Marshal(orderView{Order: *o, TraceID: o.TraceID})
	if err != nil {
		return err
	}
	// Idempotent: the script keeps the newest version.
	err = retry(ctx, func(ctx context.Context) error {
		return putOrderScript.Run(ctx, g.rdb, []string{g.keys(o.SessionID).orders}, o.OrderNo, o.UpdatedAt.UnixMicro(), b, losesTie).Err()
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Order returns the cached view of an order, or, for an order whose row does
// not exist yet, a QUEUED view made from its reservation (without sku and
// amount, which the caller knows from the session). NOT_FOUND when Redis
// knows neither: the caller may still find it in MySQL.
func (g *Gate) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	sessionID, ok := seckill.OrderNoSession(orderNo)
	if !ok {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	k := g.keys(sessionID)
	vals, err := idempotent(ctx, func(ctx context.Context) ([]any, error) { return g.rdb.HMGet(ctx, k.orders, orderNo).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	if s, ok := vals[0].(string); ok {
		var v orderView
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("order view %s: %w", orderNo, err)
		}
		v.Order.TraceID = v.TraceID
		return &v.Order, nil
	}
	raw, err := idempotent(ctx, func(ctx context.Context) (string, error) { return g.rdb.HGet(ctx, k.resv, orderNo).Result() })
	if errors.Is(err, goredis.Nil) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	} else if err != nil {
		return nil, unavailable(err)
	}
	r, err := parseReservation(sessionID, orderNo, raw)
	if err != nil {
		return nil, err
	}
	return &seckill.Order{
		OrderNo: orderNo, SessionID: sessionID, UserID: r.UserID, Quantity: r.Quantity, SKUID: r.SKUID,
		Status: seckill.StatusQueued, CreatedAt: r.ReservedAt, TraceID: r.TraceID,
	}, nil
}

// Reservation returns the live reservation of an order by its number:
// what the workflow is started with (the webhook starts a QUEUED order's
// workflow with its payment). NOT_FOUND when there is none: never
// admitted, or released since.
func (g *Gate) Reservation(ctx context.Context, orderNo string) (*seckill.Reservation, error) {
	sessionID, ok := seckill.OrderNoSession(orderNo)
	if !ok {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	raw, err := idempotent(ctx, func(ctx context.Context) (string, error) {
		return g.rdb.HGet(ctx, g.keys(sessionID).resv, orderNo).Result()
	})
	if errors.Is(err, goredis.Nil) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "no reservation for order %s", orderNo)
	} else if err != nil {
		return nil, unavailable(err)
	}
	return parseReservation(sessionID, orderNo, raw)
}
