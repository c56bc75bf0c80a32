package seckill

import (
	"context"
	"time"
)

// PaymentProvider is the payment service an order is paid through, over
// the whole life of a payment: the checkout the shopper pays at, the
// question "paid or not?" asked before an order closes unpaid, the cancel
// that makes a closed order unpayable, and refunds. Every call is
// idempotent (on the order number, or the payment id for refunds) and
// bounded by the context's deadline; a provider that cannot be reached
// answers EUNAVAILABLE, so callers retry instead of deciding on a guess.
type PaymentProvider interface {
	// Name is the provider's name in answers and logs (sandbox, http, stripe).
	Name() string
	// CreatePayment opens the provider's payment for an order, once: asked
	// again for the same order it returns the same payment.
	CreatePayment(ctx context.Context, r CheckoutRequest) (*Checkout, error)
	// QueryPayment tells where the order's payment stands.
	QueryPayment(ctx context.Context, ref PaymentRef) (ProviderPayment, error)
	// CancelPayment makes the order's payment unpayable and returns where it
	// stands afterwards: CANCELED (or NONE), or SUCCEEDED when the payment
	// had gone through first and could not be cancelled.
	CancelPayment(ctx context.Context, ref PaymentRef) (ProviderPayment, error)
	// Refund gives a captured payment back; called again for the same
	// payment it returns the same refund and moves no more money.
	Refund(ctx context.Context, r Refund) (refundID string, err error)
}

// PaymentState is where a provider's payment for an order stands.
type PaymentState string

const (
	// PaymentNone: the provider holds no payment for the order.
	PaymentNone PaymentState = "NONE"
	// PaymentOpen: created, not paid: it can still be paid or cancelled.
	PaymentOpen PaymentState = "OPEN"
	// PaymentProcessing: money in flight, neither paid nor cancellable yet.
	PaymentProcessing PaymentState = "PROCESSING"
	// PaymentSucceeded: the money is captured.
	PaymentSucceeded PaymentState = "SUCCEEDED"
	// PaymentCanceled: it can never be paid.
	PaymentCanceled PaymentState = "CANCELED"
)

// CheckoutRequest asks a provider for an order's payment.
type CheckoutRequest struct {
	OrderNo     string
	AmountCents int64
	// Currency is the ISO 4217 code, lower case (usd, eur, cny).
	Currency string
	// ExpiresAt is the order's pay deadline: the payment must not be
	// payable after it.
	ExpiresAt time.Time
	TraceID   string
}

// Checkout is the provider's payment for one order, as the shopper gets it
// (POST /api/v1/orders/{order_no}/payment): where to pay, and until when.
type Checkout struct {
	Provider  string `json:"provider"`
	OrderNo   string `json:"-"`
	PaymentID string `json:"payment_id"`
	// CheckoutURL is the page the shopper pays at.
	CheckoutURL string `json:"checkout_url"`
	// ClientSecret lets a page of the shop's own confirm the payment with
	// the provider's client library (Stripe's PaymentIntent); never stored.
	ClientSecret string    `json:"client_secret,omitempty"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// PaymentRef names an order's payment at its provider; PaymentID is empty
// when only the order number is known.
type PaymentRef struct {
	OrderNo   string
	PaymentID string
}

// ProviderPayment is the provider's answer about an order's payment.
type ProviderPayment struct {
	PaymentID   string
	State       PaymentState
	AmountCents int64
	// Currency as Payment's: empty when the provider did not say.
	Currency string
}

// Captured is the payment as the order's workflow applies it when the
// provider, not its webhook, said it succeeded. The event id is ours (the
// webhook's own event, if it comes later, is a replay of the same payment
// id and changes nothing).
func (p ProviderPayment) Captured(orderNo, traceID string) *Payment {
	return &Payment{EventID: "settle:" + p.PaymentID, PaymentID: p.PaymentID, OrderNo: orderNo,
		AmountCents: p.AmountCents, Currency: p.Currency, TraceID: traceID}
}

// DefaultPayGrace is how long past the pay deadline (or a cancel) an order
// stays open while its provider cannot say whether it was paid
// (SECKILL_PAY_GRACE). Past it the order closes anyway, and a payment that
// did go through takes the refund path.
const DefaultPayGrace = 2 * time.Minute
