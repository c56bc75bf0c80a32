// Package activities holds the steps of OrderWorkflow that touch the world:
// MySQL (the truth) and Redis (the gate and the order-view cache). Every
// method is idempotent on the order number, so Temporal may retry any of
// them after a timeout without doubling an order or a stock movement.
// Business refusals become non-retryable application errors typed with the
// domain's error code; anything else is retried.
//
// The inputs and results of the activities live here (types.go), next to
// the methods, and not in package workflows: the workflows call the
// activities by method value on a nil pointer (var a *Activities;
// workflow.ExecuteActivity(ctx, a.CloseAndRelease, in)), so workflows imports
// activities and activities must not import workflows. Imports point
// inward, workflows → activities → seckill (the domain); the domain has no
// business knowing the shape of one Temporal step. The types' JSON is part
// of recorded histories: renaming a field breaks the replay of running
// orders.
package activities

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/payments"
)

// Store is the MySQL side the activities need.
type Store interface {
	// CreateOrder returns the order's row as stored, whether this call
	// created it or found it (CreateOrder caches it as the view as it is).
	CreateOrder(ctx context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error)
	// CloseOrder and ApplyPayment return the order as their transaction
	// left it: cached as the view as it is.
	CloseOrder(ctx context.Context, req *seckill.OrderRequest, reason string) (*seckill.Order, bool, error)
	ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, *seckill.Order, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Gate is the Redis side the activities need.
type Gate interface {
	Release(ctx context.Context, sessionID int64, orderNo string) (int, error)
	PutOrder(ctx context.Context, o *seckill.Order) error
	// PutNewOrder caches the row as CreateOrder returned it, not read
	// back: it loses a tie with a cached view of the same version.
	PutNewOrder(ctx context.Context, o *seckill.Order) error
}

// Activities holds the dependencies of the order steps.
type Activities struct {
	Store Store
	Gate  Gate
	// Settle asks the payment provider before an order closes unpaid
	// whether it was paid after all; nil closes without asking.
	Settle *payments.Settle
	// Now is the worker's clock (nil: time.Now); tests give the test
	// environment's.
	Now func() time.Time
}

// CreateOrder creates the order row (WAIT_PAY, or FAILED when MySQL refuses
// the stock or the user's slots) and caches its view for polls.
func (a *Activities) CreateOrder(ctx context.Context, in CreateOrderInput) (CreateOrderResult, error) {
	ctx = seckill.WithTraceID(ctx, in.Request.TraceID)
	l := logger(ctx, in.Request.OrderNo, in.Request.TraceID)
	o, err := a.Store.CreateOrder(ctx, &in.Request, in.PayDeadline)
	if err != nil {
		return CreateOrderResult{}, failed(l, "create order", err)
	}
	if o.Status == seckill.StatusFailed {
		l.Warn("database refused an order Redis admitted (drift)")
	}
	l.Debug("order row", "status", o.Status)
	// The store returns the row as stored, new or found: cached as it is,
	// without the read back the other steps make (the creation is the
	// busiest step of a sale). A late attempt (abandoned, its workflow
	// cancelled and the order closed since) cannot cache its older row
	// over the close: the cache keeps the newest by UpdatedAt, and this
	// write loses a tie.
	if err := a.Gate.PutNewOrder(ctx, o); err != nil {
		return CreateOrderResult{}, failed(l, "publish order view", err)
	}
	return CreateOrderResult{Status: o.Status, At: a.now()}, nil
}

func (a *Activities) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// ApplyPayment records a payment: PAID, or a refund to come.
func (a *Activities) ApplyPayment(ctx context.Context, p seckill.Payment) (PaymentResult, error) {
	ctx = seckill.WithTraceID(ctx, p.TraceID)
	return a.applyPayment(ctx, log.With(logger(ctx, p.OrderNo, p.TraceID), "payment_trace_id", p.TraceID), p)
}

func (a *Activities) applyPayment(ctx context.Context, l log.Logger, p seckill.Payment) (PaymentResult, error) {
	l = log.With(l, "payment_id", p.PaymentID)
	outcome, o, err := a.Store.ApplyPayment(ctx, &p)
	if err != nil {
		return PaymentResult{}, failed(l, "apply payment", err)
	}
	l.Info("payment applied", "outcome", outcome, "status", o.Status)
	return PaymentResult{Outcome: outcome, Status: o.Status}, a.publish(ctx, l, o)
}

// closeOrder closes an unpaid order and gives its MySQL stock back.
func (a *Activities) closeOrder(ctx context.Context, l log.Logger, in CloseOrderInput) (CloseOrderResult, error) {
	if paid, err := a.paidAfterAll(ctx, in); err != nil {
		return CloseOrderResult{}, failed(l, "ask the payment provider", err)
	} else if paid != nil {
		res, err := a.applyPayment(ctx, l, *paid)
		switch {
		case seckill.ErrorCode(err) == seckill.EUNAVAILABLE || seckill.ErrorCode(err) == seckill.EINTERNAL:
			return CloseOrderResult{}, err
		case err != nil:
			// Refused: not this order's payment; the close goes on.
		case res.Status == seckill.StatusPaid:
			return CloseOrderResult{Status: res.Status, PaymentID: paid.PaymentID}, nil
		}
		// Otherwise the order could not take it (paid by another payment,
		// closed already, not its amount): it is recorded for refund, and
		// the close goes on.
	}
	o, gaveBack, err := a.Store.CloseOrder(ctx, &in.Request, in.Reason)
	if err != nil {
		return CloseOrderResult{}, failed(l, "close order", err)
	}
	l.Debug("close", "reason", in.Reason, "status", o.Status, "gave_back", gaveBack)
	return CloseOrderResult{Status: o.Status, GaveBack: gaveBack}, a.publish(ctx, l, o)
}

// paidAfterAll asks the provider, before the order closes, whether it was
// paid (see payments.Settle); nil when it may close.
func (a *Activities) paidAfterAll(ctx context.Context, in CloseOrderInput) (*seckill.Payment, error) {
	if a.Settle == nil || in.AskedAt.IsZero() {
		return nil, nil
	}
	return a.Settle.BeforeClose(ctx, in.Request.OrderNo, in.Request.TraceID, in.AskedAt)
}

// release gives the Redis reservation back (stock and the user's limit),
// exactly once however often it runs.
func (a *Activities) release(ctx context.Context, l log.Logger, sessionID int64, orderNo string) (int, error) {
	n, err := a.Gate.Release(ctx, sessionID, orderNo)
	if err != nil {
		return 0, failed(l, "release reservation", err)
	}
	return n, nil
}

// CloseAndRelease is the compensation in one activity: the close (the
// compare-and-set to CLOSED with the MySQL stock back, one tx), then, only
// if the order is closed, the Redis release. Retried as a whole it stays
// exactly-once: a retry finds the order CLOSED already (no stock moves
// twice) and the reservation released already (0 units).
func (a *Activities) CloseAndRelease(ctx context.Context, in CloseOrderInput) (CloseAndReleaseResult, error) {
	ctx = seckill.WithTraceID(ctx, in.Request.TraceID)
	closed, released, err := a.CloseLost(ctx, logger(ctx, in.Request.OrderNo, in.Request.TraceID), in)
	if err != nil {
		return CloseAndReleaseResult{}, err
	}
	return CloseAndReleaseResult{Status: closed.Status, GaveBack: closed.GaveBack, Released: released, PaymentID: closed.PaymentID}, nil
}

// CloseLost closes an order whose workflow is gone, exactly as the
// workflow's compensation would: the close (compare-and-set to CLOSED,
// MySQL stock back, ledger row with reason), then, if the order is closed,
// the Redis release. Both are CloseAndRelease's own code,
// idempotent on the order number, so a workflow that comes back and
// compensates too gives nothing back twice. It is not an activity: the
// worker's sweep calls it, with l carrying the order's log fields. released
// is the units given back in Redis.
func (a *Activities) CloseLost(ctx context.Context, l log.Logger, in CloseOrderInput) (closed CloseOrderResult, released int, err error) {
	closed, err = a.closeOrder(ctx, l, in)
	if err != nil || closed.Status.HoldsStock() || closed.Status == seckill.StatusFailed {
		// Paid meanwhile, or never held stock: nothing to give back.
		return closed, 0, err
	}
	released, err = a.release(ctx, l, in.Request.SessionID, in.Request.OrderNo)
	return closed, released, err
}

// RefreshView caches the view of an order from its row, as every step does
// after changing it. Not an activity: the sweep calls it for settled orders
// it finds without a cached view (Redis rebuilt from MySQL keeps no views),
// so that it does not look at them again.
func (a *Activities) RefreshView(ctx context.Context, l log.Logger, orderNo string) error {
	o, err := a.Store.Order(ctx, orderNo)
	if err != nil {
		return failed(l, "read order", err)
	}
	return a.publish(ctx, l, o)
}

// publish caches o, the order as a step's transaction left it, as its
// view, classifying a failure for Temporal. A retried or late step cannot
// cache an older view over a newer one: the cache keeps the newest by
// UpdatedAt, which every change moves forward.
func (a *Activities) publish(ctx context.Context, l log.Logger, o *seckill.Order) error {
	if err := a.Gate.PutOrder(ctx, o); err != nil {
		return failed(l, "publish order view", err)
	}
	return nil
}

// logger is the activity's logger (workflow and activity ids, attempt)
// with the order number and a trace id on every line: traceID, or, when
// the step is traced, the step's span and the trace it is in (the
// purchase's), so a line joins its span. (The SDK's logger logs without
// the context, so tracing.LogHandler cannot add them.)
func logger(ctx context.Context, orderNo, traceID string) log.Logger {
	l := log.With(activity.GetLogger(ctx), "order_no", orderNo)
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		return log.With(l, "trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	}
	return log.With(l, "trace_id", traceID)
}

// failed logs a failed step with its trace id and classifies the error:
// a business refusal ends the step, anything else is retried by Temporal
// (the attempt number is on the line).
func failed(l log.Logger, step string, err error) error {
	err = classify(err)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		l.Warn(step+" refused", "error", err)
	} else {
		l.Warn(step+" failed; Temporal retries it", "error", err)
	}
	return err
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
