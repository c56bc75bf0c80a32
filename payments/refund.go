package payments

import (
	"context"

	"github.com/seckill/seckill"
)

// RefundStore records an operator's refund of a paid order (see
// mysql.DB.RefundOrder) and reads orders back.
type RefundStore interface {
	RefundOrder(ctx context.Context, ch *seckill.SessionChange) (*seckill.Order, bool, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Releaser gives an order's Redis reservation back: the units to the
// sale and the shopper's per-user limit, exactly once however often it
// runs (the script deletes the reservation as its guard).
type Releaser interface {
	Release(ctx context.Context, sessionID int64, orderNo string) (int, error)
	PutOrder(ctx context.Context, o *seckill.Order) error
}

// Refund is an operator's refund of a paid order (a customer-service
// cancellation, POST /admin/v1/orders/{order_no}/refund): MySQL first (the
// order REFUND_PENDING, its payment due for the provider's refund, its
// units back to the stock, the audit row), then the units back in Redis so
// a sale that still runs can sell them again. The money goes back through
// the refund relay and RefundWorkflow, as for late payments: retried,
// parked for ops when the provider keeps refusing, never sent twice (the
// provider's idempotency key is the payment id).
type Refund struct {
	Store RefundStore
	Gate  Releaser
}

// Order refunds the order ch names. A retry under the same request id
// answers the order as it is now and does the Redis half again: the first
// attempt may have stopped between MySQL and Redis (for a retry that never
// comes, the worker's sweep releases it within a pass, and the refund's
// MarkRefunded step releases too).
func (r *Refund) Order(ctx context.Context, ch *seckill.SessionChange) (o *seckill.Order, applied bool, err error) {
	o, applied, err = r.Store.RefundOrder(ctx, ch)
	if err != nil {
		return nil, false, err
	}
	if o.Status.HoldsStock() {
		// A replay that finds the order still PAID cannot happen (the
		// first attempt committed the refund), but never give back what
		// an order holds.
		return o, applied, nil
	}
	if _, err := r.Gate.Release(ctx, o.SessionID, o.OrderNo); err != nil {
		return nil, false, err
	}
	if err := r.Gate.PutOrder(ctx, o); err != nil {
		return nil, false, err
	}
	return o, applied, nil
}
