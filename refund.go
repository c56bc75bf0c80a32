package seckill

import "context"

// Refund is one payment to give back: a payment that came after its order
// closed, or a second payment of an order already paid.
type Refund struct {
	PaymentID   string `json:"payment_id"`
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	TraceID     string `json:"trace_id"`
}

// RefundWorkflowID is the Temporal workflow id of a payment's refund: one
// per payment, so a refund is never started twice.
func RefundWorkflowID(paymentID string) string { return "refund:" + paymentID }

// PaymentProvider is the payment service's side of refunds. Refund must be
// idempotent on the payment id: called again for the same payment it
// returns the same refund and moves no more money.
type PaymentProvider interface {
	Refund(ctx context.Context, r Refund) (refundID string, err error)
}
