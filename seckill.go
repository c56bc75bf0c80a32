// Package seckill holds the domain of the flash-sale order system: sessions,
// orders, their statuses, payments, the one error vocabulary shared by
// every adapter, and the order protocol every path shares (order.go: order
// numbers, the workflow input built from a reservation, publishing an
// order's view). It imports only the standard library; adapters (mysql,
// redis, temporal), the api and the workflows depend on it, never the reverse.
package seckill

import (
	"time"
)

// Status is the lifecycle state of an order. The values are part of the
// public API contract and are stored verbatim in MySQL and in Temporal's
// OrderStatus search attribute.
type Status string

const (
	// StatusQueued: reserved in Redis, the order row is not created yet.
	StatusQueued Status = "QUEUED"
	// StatusWaitPay: the order row exists and holds stock until paid or timed out.
	StatusWaitPay Status = "WAIT_PAY"
	// StatusPaid: paid; holds its stock for good.
	StatusPaid Status = "PAID"
	// StatusClosed: timed out or cancelled; its stock was given back.
	StatusClosed Status = "CLOSED"
	// StatusFailed: could not be created (the database refused the stock or
	// the per-user limit). Never held database stock.
	StatusFailed Status = "FAILED"
	// StatusRefundPending: paid after it closed; the money goes back.
	StatusRefundPending Status = "REFUND_PENDING"
	// StatusRefunded: the late payment was refunded.
	StatusRefunded Status = "REFUNDED"
)

// Statuses lists every order status, in lifecycle order.
var Statuses = []Status{StatusQueued, StatusWaitPay, StatusPaid, StatusClosed, StatusFailed, StatusRefundPending, StatusRefunded}

// HoldsStock reports whether an order in this status keeps units out of the
// database stock. A REFUND_PENDING order closed (and gave its stock back)
// before its payment arrived, so it holds none.
func (s Status) HoldsStock() bool { return s == StatusWaitPay || s == StatusPaid }

// Holding are the statuses that hold stock (HoldsStock), for the stores'
// queries: asked here once, so a query and a decision cannot disagree.
func Holding() []Status {
	var out []Status
	for _, s := range Statuses {
		if s.HoldsStock() {
			out = append(out, s)
		}
	}
	return out
}

// DefaultPayTimeout is how long an order waits for its payment in production.
const DefaultPayTimeout = 15 * time.Minute

// MaxPerUserLimit caps a session's per-user limit. Each unit a user holds
// takes one slot, and the slots of a user live in one 32-bit mask inside the
// admission script, so a limit above this cannot be represented.
const MaxPerUserLimit = 30

// Session is one flash sale inside a time window: of one SKU (SKUID,
// Title, PriceCents, TotalStock), or of several items (Items, item.go).
type Session struct {
	ID         int64  `json:"id"`
	SKUID      int64  `json:"sku_id,omitempty"`
	Title      string `json:"title"`
	PriceCents int64  `json:"price_cents,omitempty"`
	// Items are a sale of several items' goods (none for one SKU).
	Items []Item `json:"items,omitempty"`
	// Currency is what PriceCents is in: an ISO 4217 code in lower case
	// (usd, eur, cny), as the payment providers take it. Empty: the
	// deployment's SECKILL_CURRENCY.
	Currency     string    `json:"currency,omitempty"`
	TotalStock   int       `json:"total_stock"`
	PerUserLimit int       `json:"per_user_limit"`
	StartAt      time.Time `json:"start_at"`
	EndAt        time.Time `json:"end_at"`
	// RequireTicket makes an order need a purchase ticket (X-Seckill-Ticket).
	RequireTicket bool `json:"require_ticket"`
	// RequireCaptcha makes the ticket need a solved captcha first (a human
	// check at the peak); it implies RequireTicket, so the Redis gate never
	// sees a request that skipped the check.
	RequireCaptcha bool `json:"require_captcha"`
	// Paused: an operator stopped the orders for now (423 PAUSED);
	// payments, timeouts and cancellations go on.
	Paused bool `json:"paused"`
	// Mode is who may buy (registration.go): everyone, first come
	// (ModeFirstCome, also when empty), or only the shoppers who
	// registered in [RegisterFrom, RegisterUntil) (ModeReserved).
	Mode          SessionMode `json:"mode"`
	RegisterFrom  time.Time   `json:"register_from,omitzero"`
	RegisterUntil time.Time   `json:"register_until,omitzero"`
	// A draw's fields (draw.go): how long a drawn right lasts; the
	// commitment to the seed (published once the worker sealed it, before
	// registration opens); the registrant list's count and digest (from
	// register_until on); and the seed itself with the time of the draw
	// and the stock it drew, all three only once drawn (the seed is secret
	// until then: who knows it knows the winners).
	RightTTLSeconds   int       `json:"right_ttl_seconds,omitempty"`
	DrawCommitment    string    `json:"draw_commitment,omitempty"`
	RegistrantsCount  *int      `json:"registrants_count,omitempty"`
	RegistrantsDigest string    `json:"registrants_digest,omitempty"`
	DrawSeed          string    `json:"draw_seed,omitempty"`
	DrawnAt           time.Time `json:"drawn_at,omitzero"`
	DrawnStock        int       `json:"drawn_stock,omitempty"`
	// PreheatedAt is when a preheat first loaded the sale: its mode is
	// fixed from then on. PausedAt is when the current pause began (zero
	// while not paused): a draw's rights do not run during a pause.
	// RightsVersion counts the changes of a drawn sale's rights (a pass
	// that grants, a resume's extension): a copy of the positions is
	// reread only when it moves.
	PreheatedAt   time.Time `json:"preheated_at,omitzero"`
	PausedAt      time.Time `json:"paused_at,omitzero"`
	RightsVersion int       `json:"rights_version,omitempty"`
}

// SessionView is the public shape of a session in the HTTP API (GET
// /api/v1/sessions/{id}, the session list, the admin answers): the session
// with its remaining stock and state at the instant of the answer.
type SessionView struct {
	*Session
	RemainingStock int          `json:"remaining_stock"`
	State          SessionState `json:"state"`
	// Items are the sale's items with their remaining stock (one for a
	// single-SKU sale).
	Items []ItemView `json:"items"`
}

// SessionState is the public state of a session at one instant.
type SessionState string

const (
	SessionUpcoming SessionState = "UPCOMING"
	SessionActive   SessionState = "ACTIVE"
	SessionSoldOut  SessionState = "SOLD_OUT"
	SessionEnded    SessionState = "ENDED"
	// SessionPaused: in its window, but an operator paused the orders.
	SessionPaused SessionState = "PAUSED"
	// SessionPreparing: in its window, but its stock is not loaded into
	// Redis yet (not preheated): orders answer 503 until it is.
	SessionPreparing SessionState = "PREPARING"
)

// StateAt tells the state of s at now given its remaining stock.
func (s *Session) StateAt(now time.Time, remaining int) SessionState {
	switch {
	case now.Before(s.StartAt):
		return SessionUpcoming
	case !now.Before(s.EndAt):
		return SessionEnded
	case s.Paused:
		return SessionPaused
	case remaining <= 0:
		return SessionSoldOut
	default:
		return SessionActive
	}
}

// Validate checks a session an admin wants to create.
func (s *Session) Validate() error {
	if err := s.validateItems(); err != nil {
		return err
	}
	if err := checkTitle("title", s.Title); err != nil {
		return err
	}
	switch {
	case s.SKUID <= 0 && !s.Several():
		return Errorf(EINVALID, "sku_id must be a positive integer")
	case s.PriceCents <= 0 && !s.Several():
		// Free items are refused rather than half supported: an order of
		// amount 0 could never be paid (a provider sends no webhook for 0,
		// and the webhook refuses amount 0), so every one would hold its
		// stock for the pay timeout and then close. Giving items away needs
		// its own path (PAID at creation, no payment row, no refund), which
		// no sale has asked for yet.
		return Errorf(EINVALID, "price_cents must be a positive integer: free items (price 0) are not supported")
	case s.Currency != "" && !ValidCurrency(s.Currency):
		return Errorf(EINVALID, "currency must be a lower-case ISO 4217 code such as usd, not %q", s.Currency)
	case (s.TotalStock <= 0 || s.TotalStock > 10_000_000) && !s.Several():
		return Errorf(EINVALID, "stock must be between 1 and 10000000")
	case s.PerUserLimit <= 0 || s.PerUserLimit > MaxPerUserLimit:
		return Errorf(EINVALID, "per_user_limit must be between 1 and %d", MaxPerUserLimit)
	case s.StartAt.IsZero() || s.EndAt.IsZero():
		return Errorf(EINVALID, "start_at and end_at are required (RFC 3339)")
	case !s.EndAt.After(s.StartAt):
		return Errorf(EOUTOFRANGE, "end_at must be after start_at")
	}
	return s.validateMode()
}

// ValidCurrency reports whether c looks like an ISO 4217 code as the
// payment providers take it: three lower-case letters.
func ValidCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// Reservation is what the admission script records for one winner: the
// units taken from Redis stock and the per-user slots they occupy. It is the
// durable intent from which the order workflow is started.
type Reservation struct {
	OrderNo    string    `json:"order_no"`
	SessionID  int64     `json:"session_id"`
	UserID     int64     `json:"user_id"`
	Quantity   int       `json:"quantity"`
	Slots      []int     `json:"slots"`
	ReservedAt time.Time `json:"reserved_at"`
	TraceID    string    `json:"trace_id"`
	// SpanID is the traced purchase's span (Attempt.SpanID): the
	// workflow's start continues the trace under it.
	SpanID string `json:"span_id,omitempty"`
	// SKUID is the item reserved: in a sale of several items the one the
	// attempt named (its units come back to it), in a single-SKU sale the
	// sale's SKU once NewOrderRequest set it (0 before).
	SKUID int64 `json:"sku_id"`
}

// Order is the view of one order that shoppers, ops and tests read.
type Order struct {
	OrderNo   string `json:"order_no"`
	SessionID int64  `json:"session_id"`
	SKUID     int64  `json:"sku_id"`
	// Title is its item's title when the shopper won (absent on orders
	// made before orders carried it).
	Title       string `json:"title,omitempty"`
	UserID      int64  `json:"user_id"`
	Quantity    int    `json:"quantity"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is what AmountCents is in, the session's (ISO 4217, lower
	// case); absent on orders made before orders carried it.
	Currency string `json:"currency,omitempty"`
	Status   Status `json:"status"`
	// Times a view does not know yet are absent from its JSON, never zero.
	CreatedAt   time.Time `json:"created_at,omitzero"`
	PayDeadline time.Time `json:"pay_deadline,omitzero"`
	TraceID     string    `json:"-"`
	// UpdatedAt is when the row last changed (created, paid, closed):
	// cached views never go back to an older one, and the shopper (and
	// seckill-lab bench) read when a change happened without polling for it.
	// A QUEUED view has none: its row does not exist yet.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Payment is one notification from the payment provider that money was
// captured for an order.
type Payment struct {
	EventID     string `json:"event_id"`
	PaymentID   string `json:"payment_id"`
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	// Currency is the money's, ISO 4217 in lower case, as the provider
	// named it; empty when it did not (an adapter that leaves it out).
	Currency string `json:"currency,omitempty"`
	TraceID  string `json:"trace_id"`
}

// Pays tells whether p is the amount due in the currency due. Digits in
// another currency are not the order's amount: ¥1999 does not pay
// $19.99. A payment naming no currency, or an order of none (made before
// orders carried one), is taken at its amount alone.
func (p *Payment) Pays(dueCents int64, currency string) bool {
	return p.AmountCents == dueCents && (p.Currency == "" || currency == "" || p.Currency == currency)
}

// PaymentOutcome is what applying a payment to an order did.
type PaymentOutcome string

const (
	// PaymentCaptured: the order went WAIT_PAY → PAID with this payment.
	PaymentCaptured PaymentOutcome = "CAPTURED"
	// PaymentDuplicate: this payment (same payment or event id) was applied
	// before; nothing changed.
	PaymentDuplicate PaymentOutcome = "DUPLICATE"
	// PaymentRefundPending: the order could not take this payment (it closed,
	// or it was already paid by another payment): the money must go back.
	PaymentRefundPending PaymentOutcome = "REFUND_PENDING"
)

// OrderRequest is everything one order's workflow needs, fixed when the
// shopper won the reservation: the workflow never reads the session again,
// so a later admin change cannot alter an accepted order's price or timeout.
type OrderRequest struct {
	Reservation
	// Title and PriceCents are the item's as they were at the
	// reservation (no title in the inputs of orders reserved before).
	Title      string        `json:"title,omitempty"`
	PriceCents int64         `json:"price_cents"`
	PayTimeout time.Duration `json:"pay_timeout"`
	// Currency is the session's (absent in the inputs of orders reserved
	// before orders carried it).
	Currency string `json:"currency,omitempty"`
	// PayBy is the pay deadline: PayTimeout after the reservation, the
	// moment the shopper won and from which a QUEUED order is payable, not
	// after the workflow started. A backlog of starts therefore never
	// moves a deadline, and the winners of one burst have theirs within
	// the same second, as the sweep and reconcile (which age reservations)
	// always assumed. Zero in a request built without a reservation time
	// or pay timeout (by hand: tests, ops): the workflow then counts from
	// its own start.
	PayBy time.Time `json:"pay_by,omitzero"`
}

// AmountCents is what the shopper must pay.
func (r *OrderRequest) AmountCents() int64 { return r.PriceCents * int64(r.Quantity) }

// Order returns the view of the order this request creates.
func (r *OrderRequest) Order(status Status, payDeadline time.Time) *Order {
	return &Order{
		OrderNo: r.OrderNo, SessionID: r.SessionID, SKUID: r.SKUID, Title: r.Title, UserID: r.UserID,
		Quantity: r.Quantity, AmountCents: r.AmountCents(), Currency: r.Currency, Status: status,
		CreatedAt: r.ReservedAt, PayDeadline: payDeadline, TraceID: r.TraceID,
	}
}

func (s Status) String() string { return string(s) }
