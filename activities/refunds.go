package activities

import (
	"context"

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
	id, err := a.Provider.Refund(ctx, r)
	return id, classify(err)
}

// MarkRefunded records the refund and refreshes the order's cached view.
func (a *Refunds) MarkRefunded(ctx context.Context, r seckill.Refund, refundID string) (seckill.Status, error) {
	st, err := a.Store.MarkRefunded(ctx, r.PaymentID, refundID)
	if err != nil {
		return "", classify(err)
	}
	o, err := a.Store.Order(ctx, r.OrderNo)
	if err != nil {
		return "", classify(err)
	}
	return st, classify(a.Gate.PutOrder(ctx, o))
}
