package activities

import (
	"context"

	"go.temporal.io/sdk/log"

	"github.com/seckill/seckill"
)

// RefundStore is the MySQL side of refunds.
type RefundStore interface {
	MarkRefunded(ctx context.Context, paymentID, refundID string) (seckill.Status, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Refunds holds the dependencies of the refund steps.
type Refunds struct {
	Store    RefundStore
	Provider seckill.PaymentProvider
	Gate     Gate
}

// RefundPayment asks the provider to give the payment back; idempotent on
// the payment id.
func (a *Refunds) RefundPayment(ctx context.Context, r seckill.Refund) (string, error) {
	l := refundLogger(ctx, r)
	id, err := a.Provider.Refund(ctx, r)
	if err != nil {
		return "", failed(l, "refund at the provider", err)
	}
	l.Info("refunded at the provider", "refund_id", id, "amount_cents", r.AmountCents)
	return id, nil
}

// MarkRefunded records the refund and refreshes the order's cached view.
func (a *Refunds) MarkRefunded(ctx context.Context, r seckill.Refund, refundID string) (seckill.Status, error) {
	l := refundLogger(ctx, r)
	st, err := a.Store.MarkRefunded(ctx, r.PaymentID, refundID)
	if err != nil {
		return "", failed(l, "record refund", err)
	}
	o, err := a.Store.Order(ctx, r.OrderNo)
	if err != nil {
		return "", failed(l, "read order for its cached view", err)
	}
	if err := a.Gate.PutOrder(ctx, o); err != nil {
		return "", failed(l, "cache order view", err)
	}
	return st, nil
}

func refundLogger(ctx context.Context, r seckill.Refund) log.Logger {
	return log.With(logger(ctx, r.OrderNo, r.TraceID), "payment_id", r.PaymentID)
}
