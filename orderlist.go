package seckill

import "time"

// OrderFilter picks the orders an operator lists or exports: each field
// that is set narrows the list (zero: any). From is inclusive, To
// exclusive, both on the order's creation.
type OrderFilter struct {
	SessionID int64
	UserID    int64
	Status    Status
	From, To  time.Time
}

// OrderRecord is everything known of one order, for customer service: the
// order, every change of its status, the payments received for it, their
// refunds and the events sent of it.
type OrderRecord struct {
	Order    *Order
	History  []OrderChange
	Payments []PaymentRecord
	Refunds  []RefundState
	Events   []Event
}

// OrderChange is one status change of an order (its ledger row): when,
// from what to what, and why.
type OrderChange struct {
	At     time.Time `json:"at"`
	From   Status    `json:"from"`
	To     Status    `json:"to"`
	Reason string    `json:"reason,omitempty"`
}

// PaymentRecord is a payment received for an order as stored: Provider is
// the one of the order's checkout ("" when it opened none, e.g. a payment
// through the signed webhook).
type PaymentRecord struct {
	Provider    string `json:"provider,omitempty"`
	PaymentID   string `json:"payment_id"`
	Status      string `json:"status"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is the one the provider took, else the order's.
	Currency string    `json:"currency,omitempty"`
	At       time.Time `json:"at"`
}
