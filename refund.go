package seckill

import "time"

// Refund is one payment to give back, whole: a payment that came after its
// order closed, a second payment of an order already paid, one of another
// amount or currency than the order's, or the payment of an order an
// operator refunded.
type Refund struct {
	PaymentID   string `json:"payment_id"`
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is what AmountCents counts the smallest unit of: the
	// payment's, as the provider named it ("" when it named none; ops'
	// listings then give the order's).
	Currency string `json:"currency,omitempty"`
	TraceID  string `json:"trace_id"`
}

// RefundRetry is how refunds that failed at the provider are tried again
// (see Retry). Each try is one refund run. A parked refund stays
// REFUND_PENDING and visible (`seckill refunds`), but is no longer tried on
// its own, so a payment the provider keeps refusing costs one slot of ops
// attention instead of a share of every relay pass.
type RefundRetry = Retry

// DefaultRefundRetry tries for about five hours (30s, 1m, 2m … capped at
// an hour, 12 runs) before parking: long enough for a provider outage, short
// enough that a refund the provider will never take reaches ops the same day.
var DefaultRefundRetry = RefundRetry{First: 30 * time.Second, Max: time.Hour, Attempts: 12}

// Refund states, as ops see them.
const (
	// RefundDue: REFUND_PENDING, tried (again) at NextAttemptAt.
	RefundDue = "pending"
	// RefundParked: REFUND_PENDING, no longer tried on its own; `seckill
	// refunds retry <payment_id>` gives it a fresh round.
	RefundParked = "parked"
	// RefundReceived: a payment the webhook wrote before signalling whose
	// order workflow has not recorded it (yet). The refund relay settles it
	// once no workflow runs for the order.
	RefundReceived = "received"
)

// RefundState is where one refund stands (`seckill refunds`).
type RefundState struct {
	Refund
	State     string    `json:"state"`
	Attempts  int       `json:"attempts"`
	LastError string    `json:"last_error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// NextAttemptAt is when a due refund is tried again (zero: now).
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// ParkedAt is when a parked refund stopped being tried.
	ParkedAt time.Time `json:"parked_at,omitzero"`
	// RefundID is the provider's refund, once refunded.
	RefundID string `json:"refund_id,omitempty"`
}
