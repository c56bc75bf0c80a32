// Package activities holds the steps of OrderWorkflow that touch the world:
// MySQL (the truth) and Redis (the gate and the order-view cache). Every
// method is idempotent on the order number, so Temporal may retry any of
// them after a timeout without doubling an order or a stock movement.
// Business refusals become non-retryable application errors typed with the
// domain's error code; anything else is retried.
package activities

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/workflows"
)

// Store is the MySQL side the activities need.
type Store interface {
	CreateOrder(ctx context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error)
	CloseOrder(ctx context.Context, req *seckill.OrderRequest, reason string) (seckill.Status, bool, error)
	ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, seckill.Status, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Gate is the Redis side the activities need.
type Gate interface {
	Release(ctx context.Context, sessionID int64, orderNo string) (int, error)
	PutOrder(ctx context.Context, o *seckill.Order) error
}

// Activities holds the dependencies of the order steps.
type Activities struct {
	Store Store
	Gate  Gate
}

// CreateOrder creates the order row (WAIT_PAY, or FAILED when MySQL refuses
// the stock or the user's slots) and caches its view for polls.
func (a *Activities) CreateOrder(ctx context.Context, in workflows.CreateOrderInput) (workflows.CreateOrderResult, error) {
	o, err := a.Store.CreateOrder(ctx, &in.Request, in.PayDeadline)
	if err != nil {
		return workflows.CreateOrderResult{}, classify(err)
	}
	if o.Status == seckill.StatusFailed {
		activity.GetLogger(ctx).Warn("database refused an order Redis admitted (drift)",
			"order_no", o.OrderNo, "trace_id", in.Request.TraceID)
	}
	return workflows.CreateOrderResult{Status: o.Status}, a.publish(ctx, o.OrderNo)
}

// ApplyPayment records a payment: PAID, or a refund to come.
func (a *Activities) ApplyPayment(ctx context.Context, p seckill.Payment) (workflows.PaymentResult, error) {
	outcome, status, err := a.Store.ApplyPayment(ctx, &p)
	if err != nil {
		return workflows.PaymentResult{}, classify(err)
	}
	return workflows.PaymentResult{Outcome: outcome, Status: status}, a.publish(ctx, p.OrderNo)
}

// CloseOrder closes an unpaid order and gives its MySQL stock back.
func (a *Activities) CloseOrder(ctx context.Context, in workflows.CloseOrderInput) (workflows.CloseOrderResult, error) {
	status, gaveBack, err := a.Store.CloseOrder(ctx, &in.Request, in.Reason)
	if err != nil {
		return workflows.CloseOrderResult{}, classify(err)
	}
	return workflows.CloseOrderResult{Status: status, GaveBack: gaveBack}, a.publish(ctx, in.Request.OrderNo)
}

// ReleaseReservation gives the Redis reservation back (stock and the
// user's limit), exactly once however often it runs.
func (a *Activities) ReleaseReservation(ctx context.Context, in workflows.ReleaseInput) (int, error) {
	n, err := a.Gate.Release(ctx, in.SessionID, in.OrderNo)
	return n, classify(err)
}

// publish refreshes the cached view of an order from its row. It reads the
// row rather than trusting the caller, so a retried step never caches a
// stale status over a newer one.
func (a *Activities) publish(ctx context.Context, orderNo string) error {
	o, err := a.Store.Order(ctx, orderNo)
	if err != nil {
		return classify(err)
	}
	return classify(a.Gate.PutOrder(ctx, o))
}

// classify turns a domain error into a non-retryable application error
// typed with its code, and leaves infrastructure errors retryable.
func classify(err error) error {
	var e *seckill.Error
	if err == nil || !errors.As(err, &e) || e.Code == seckill.EUNAVAILABLE {
		return err
	}
	return temporal.NewNonRetryableApplicationError(e.Message, e.Code, err)
}
