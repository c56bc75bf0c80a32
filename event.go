package seckill

import (
	"encoding/json"
	"strconv"
	"time"
)

// This file is the events out: what fulfilment, notifications and
// finance learn of an order's life and of a draw's registrations. An event
// is recorded in the same transaction as the change it tells of,
// sequenced into one gap-free feed (GET /admin/v1/events), and delivered
// as a signed webhook (docs/events.md).

// EventAPIVersion is the shape of the events recorded now: every event
// carries the version it was recorded with, so a consumer pins the shape
// it reads. A change of an event's body (the order's or the
// registration's JSON included) takes a new date.
const EventAPIVersion = "2026-12-05"

// EventType names what happened to an order or a registration.
type EventType string

// The order event types: one per status an order's change can reach that
// someone outside the sale acts on.
const (
	// EventOrderCreated: the order's row exists, WAIT_PAY, with its
	// pay_deadline (the "pay by" a shopper is told).
	EventOrderCreated EventType = "order.created"
	EventOrderPaid    EventType = "order.paid"
	// EventOrderRefundPending: the money is going back (an operator's
	// refund, or a payment that came after the close). It goes out when
	// the order changes, not when the provider confirms, because an
	// operator's refund puts the unit back on sale at once: fulfilment
	// must stop shipping now, not hours later when a retried refund
	// succeeds. Every order.refunded follows one.
	EventOrderRefundPending EventType = "order.refund_pending"
	EventOrderClosed        EventType = "order.closed"
	EventOrderRefunded      EventType = "order.refunded"
	EventOrderFailed        EventType = "order.failed"
)

// The registration event types, of a draw sale's registrants.
const (
	// EventRegistrationWon: a right to buy granted, at the draw or passed
	// on from a lapsed one, until the registration's right_until.
	EventRegistrationWon EventType = "registration.won"
	// EventRegistrationLost: the sale's passing is over and the
	// registrant bought nothing (sent only with SECKILL_EVENTS_LOST=1:
	// one per such registrant, a million for a million).
	EventRegistrationLost EventType = "registration.lost"
)

// EventFor returns the event a change to status emits; false when a change
// to it emits none.
func EventFor(status Status) (EventType, bool) {
	switch status {
	case StatusWaitPay:
		return EventOrderCreated, true
	case StatusPaid:
		return EventOrderPaid, true
	case StatusRefundPending:
		return EventOrderRefundPending, true
	case StatusClosed:
		return EventOrderClosed, true
	case StatusRefunded:
		return EventOrderRefunded, true
	case StatusFailed:
		return EventOrderFailed, true
	}
	return "", false
}

// Event is one event, as the feed lists it and the webhook sends it: of
// an order (Order) or of a registration (Registration).
type Event struct {
	// ID is stable and unique: a receiver deduplicates by it (delivery
	// is at least once).
	ID   string    `json:"event_id"`
	Type EventType `json:"type"`
	// APIVersion is the shape of the event as recorded (EventAPIVersion
	// then).
	APIVersion string `json:"api_version"`
	// At is when the change happened (its ledger row's time).
	At time.Time `json:"at"`
	// Order is the order's JSON (an Order) as of the change, kept as
	// recorded: a later change of the Order type never rewrites history.
	Order json.RawMessage `json:"order,omitempty"`
	// Registration is a registration event's registration (a
	// Registration) as of the change, kept as recorded.
	Registration json.RawMessage `json:"registration,omitempty"`
	// OrderNo is the order the event is of (also inside Order), or a
	// registration event's RegistrationEventKey: what the delivery orders
	// by. Not sent.
	OrderNo string `json:"-"`
	// TraceID is the order's trace (the purchase's), which its delivery's
	// span links to; "" for a registration's. Not sent.
	TraceID string `json:"-"`
}

// RegistrationEventKey is what a registration's events are ordered by,
// as an order's are by its number: one registration's events go out one
// at a time, in order.
func RegistrationEventKey(sessionID, userID int64) string {
	return "registration:" + strconv.FormatInt(sessionID, 10) + ":" + strconv.FormatInt(userID, 10)
}

// DefaultEventAttempts is how many failed deliveries park an event
// (SECKILL_EVENTS_ATTEMPTS' default).
const DefaultEventAttempts = 20

// EventRetry is the backoff of failed deliveries with attempts failed
// tries before parking: 5s, 10s, 20s … capped at 10 minutes, so the
// default 20 attempts ride out about two hours of a receiver's outage.
func EventRetry(attempts int) Retry {
	return Retry{First: 5 * time.Second, Max: 10 * time.Minute, Attempts: attempts}
}

// Event delivery states, as ops see them.
const (
	// EventPending: not delivered yet; sent at NextAttemptAt, once every
	// earlier event of its order is delivered.
	EventPending = "pending"
	// EventParked: failed too often; no longer sent on its own (and the
	// later events of its order wait behind it) until `seckill events
	// retry`.
	EventParked = "parked"
)

// EventState is where the delivery of one event stands (`seckill events`).
type EventState struct {
	Event
	State     string `json:"state"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error,omitempty"`
	// NextAttemptAt is when a pending event is tried again (past or
	// zero: now).
	NextAttemptAt time.Time `json:"next_attempt_at,omitzero"`
	// ParkedAt is when a parked event stopped being tried.
	ParkedAt time.Time `json:"parked_at,omitzero"`
}
