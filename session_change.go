package seckill

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Defaults of a session's life (SECKILL_PREHEAT_LEAD is DefaultPreheatLead).
const (
	// DefaultRetainAfter is how long an ended, quiet session's Redis keys
	// live on (SECKILL_RETAIN_AFTER): order views and idempotency records
	// answer from Redis that long after the sale.
	DefaultRetainAfter = 24 * time.Hour
)

// SessionAction is what an operator does to a session during its life.
type SessionAction string

const (
	// ActionPause stops new orders (423 PAUSED) until ActionResume;
	// payments, pay timeouts and cancellations go on.
	ActionPause  SessionAction = "pause"
	ActionResume SessionAction = "resume"
	// ActionEnd ends the sale now: end_at becomes now (410 ENDED after).
	ActionEnd SessionAction = "end"
	// ActionAddStock adds units to the sale, in MySQL and then in Redis.
	ActionAddStock SessionAction = "add_stock"
	// ActionUpdate changes the title, price, window or per-user limit of a
	// session that has not started.
	ActionUpdate SessionAction = "update"
	// ActionRefund gives a paid order of the session its money back (a
	// customer-service cancellation): PAID → REFUND_PENDING → REFUNDED
	// through the payment provider, its units back to the sale.
	ActionRefund SessionAction = "refund"
	// ActionCreate is the session's creation: the first row of its audit.
	ActionCreate SessionAction = "create"
)

// MaxRefundReason bounds the reason an operator gives for a refund.
const MaxRefundReason = 256

// MaxAddStock bounds one ActionAddStock (the same bound as a session's stock).
const MaxAddStock = 10_000_000

// SessionChange is one operator's change of a session, recorded in the
// session's audit ledger in the same transaction as the change itself.
type SessionChange struct {
	SessionID int64         `json:"session_id"`
	Action    SessionAction `json:"action"`
	// Actor and ActorRole are the operator who asked, as their credential
	// says (Operator.Name and Role; never what the request claims), and
	// From the address it came from.
	Actor     string `json:"actor"`
	ActorRole Role   `json:"actor_role,omitempty"`
	From      string `json:"from"`
	// RequestID makes the change idempotent: a retry with the same id (the
	// Idempotency-Key, else the request's trace id) applies it once.
	RequestID string `json:"request_id"`
	// Fingerprint, on a create whose RequestID is the client's
	// Idempotency-Key, is its body's: a retry with the same key and body
	// gets the sale the key created; another body, IDEMPOTENCY_MISMATCH.
	Fingerprint string `json:"fingerprint,omitempty"`
	// TraceID is the request's trace id: the ledger rows the change
	// writes carry it (absent in older audit rows).
	TraceID string `json:"trace_id,omitempty"`
	// Add is ActionAddStock's unit count (> 0), and SKUID the item it
	// goes to: required in a sale of several items, 0 (the sale's one
	// item) or its SKU in a single-SKU sale.
	Add   int   `json:"add,omitempty"`
	SKUID int64 `json:"sku_id,omitempty"`
	// Update is ActionUpdate's new values (nil fields stay).
	Update *SessionUpdate `json:"update,omitempty"`
	// OrderNo and Reason are ActionRefund's order and why it is refunded.
	OrderNo string    `json:"order_no,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}

// SessionUpdate holds the fields of a session that may change before it
// starts; nil keeps the current value.
type SessionUpdate struct {
	Title        *string    `json:"title,omitempty"`
	PriceCents   *int64     `json:"price_cents,omitempty"`
	PerUserLimit *int       `json:"per_user_limit,omitempty"`
	StartAt      *time.Time `json:"start_at,omitempty"`
	EndAt        *time.Time `json:"end_at,omitempty"`
	// Mode and the registration window change only before registration
	// opens (a shopper who registered must not find the rules changed).
	Mode          *SessionMode `json:"mode,omitempty"`
	RegisterFrom  *time.Time   `json:"register_from,omitempty"`
	RegisterUntil *time.Time   `json:"register_until,omitempty"`
	// RightTTLSeconds is a draw's right's duration.
	RightTTLSeconds *int `json:"right_ttl_seconds,omitempty"`
}

// Empty reports whether u changes nothing.
func (u *SessionUpdate) Empty() bool {
	return u == nil || (u.Title == nil && u.PriceCents == nil && u.PerUserLimit == nil && u.StartAt == nil && u.EndAt == nil &&
		!u.changesRegistration())
}

// changesRegistration reports whether u touches the mode or its window.
func (u *SessionUpdate) changesRegistration() bool {
	return u.Mode != nil || u.RegisterFrom != nil || u.RegisterUntil != nil || u.RightTTLSeconds != nil
}

// Apply returns s with u's values, validated.
func (u *SessionUpdate) Apply(s Session) (*Session, error) {
	if u.Title != nil {
		s.Title = *u.Title
	}
	if u.PriceCents != nil {
		if s.Several() {
			return nil, Errorf(EINVALID, "session %d sells %d items, each at its own price: price_cents is not the sale's", s.ID, len(s.Items))
		}
		s.PriceCents = *u.PriceCents
	}
	if u.PerUserLimit != nil {
		s.PerUserLimit = *u.PerUserLimit
	}
	if u.StartAt != nil {
		s.StartAt = stored(*u.StartAt)
	}
	if u.EndAt != nil {
		s.EndAt = stored(*u.EndAt)
	}
	if u.Mode != nil {
		s.Mode = *u.Mode
	}
	if u.RegisterFrom != nil {
		s.RegisterFrom = stored(*u.RegisterFrom)
	}
	if u.RegisterUntil != nil {
		s.RegisterUntil = stored(*u.RegisterUntil)
	}
	if u.RightTTLSeconds != nil {
		s.RightTTLSeconds = *u.RightTTLSeconds
	}
	return &s, s.Validate()
}

// stored is t as the store keeps it: UTC, to the millisecond.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// registrationDefaults prepares s for u's mode change: a sale turned
// first come drops its window, one turned reserved or draw registers from
// now until its start unless u says otherwise, and a draw's rights last
// DefaultRightTTL and buy one unit each (per_user_limit 1).
func (u *SessionUpdate) registrationDefaults(s Session, now time.Time) Session {
	if u.Mode == nil || *u.Mode == s.Mode {
		return s
	}
	s.RegisterFrom, s.RegisterUntil, s.RightTTLSeconds = time.Time{}, time.Time{}, 0
	if *u.Mode == ModeDraw {
		s.RightTTLSeconds, s.PerUserLimit = int(DefaultRightTTL.Seconds()), 1
	}
	if *u.Mode == ModeReserved || *u.Mode == ModeDraw {
		s.RegisterFrom = stored(now)
		s.RegisterUntil = s.StartAt
		if u.StartAt != nil {
			s.RegisterUntil = stored(*u.StartAt)
		}
	}
	return s
}

// Check validates the change itself (not yet against the session's state).
func (c *SessionChange) Check() error {
	switch c.Action {
	case ActionPause, ActionResume, ActionEnd:
	case ActionAddStock:
		if c.Add <= 0 || c.Add > MaxAddStock {
			return Errorf(EINVALID, "add must be between 1 and %d", MaxAddStock)
		}
	case ActionUpdate:
		if c.Update.Empty() {
			return Errorf(EINVALID, "nothing to change: give title, price_cents, per_user_limit, start_at, end_at, mode, register_from, register_until or right_ttl_seconds")
		}
	case ActionRefund:
		if c.OrderNo == "" || len(c.OrderNo) > 64 {
			return Errorf(EINVALID, "a refund names its order: order_no of 1 to 64 characters")
		}
		if c.Reason = strings.TrimSpace(c.Reason); c.Reason == "" || len(c.Reason) > MaxRefundReason {
			return Errorf(EINVALID, "field \"reason\" must be 1 to %d characters: it is kept in the audit ledger", MaxRefundReason)
		}
	default:
		return Errorf(EINVALID, "unknown session action %q", c.Action)
	}
	if c.RequestID == "" || len(c.RequestID) > MaxIdempotencyKey {
		return Errorf(EINVALID, "a session change needs a request id of 1 to %d characters", MaxIdempotencyKey)
	}
	if c.Actor = strings.TrimSpace(c.Actor); c.Actor == "" || len(c.Actor) > 64 {
		return Errorf(EINVALID, "actor must be 1 to 64 characters")
	}
	return nil
}

// ApplyTo makes the change on s as of now, or says why the session's
// state forbids it: an ended session takes nothing but a resume; a
// session's window and terms change only before it starts; an end before
// the start closes the window empty; an add may not take the total past
// MaxAddStock. It returns the units the database stock gains (an add's).
// The stores persist the result; the rules are these.
func (c *SessionChange) ApplyTo(s *Session, now time.Time) (added int, err error) {
	if !now.Before(s.EndAt) && c.Action != ActionResume {
		return 0, Errorf(ECONFLICT, "session %d ended at %s", s.ID, s.EndAt.UTC().Format(time.RFC3339))
	}
	switch c.Action {
	case ActionPause:
		if !s.Paused {
			s.PausedAt = now
		}
		s.Paused = true
	case ActionResume:
		// The store extends a draw's open rights by the pause (RightEnd)
		// in the same step.
		s.Paused, s.PausedAt = false, time.Time{}
	case ActionEnd:
		s.EndAt = now
		if !s.StartAt.Before(now) {
			// Ended before it started: the window closes empty.
			s.StartAt = now.Add(-time.Millisecond)
		}
	case ActionAddStock:
		it, err := s.Item(c.SKUID)
		if err != nil {
			return 0, err
		}
		if it.TotalStock+c.Add > MaxAddStock {
			return 0, Errorf(EINVALID, "stock would exceed %d", MaxAddStock)
		}
		s.TotalStock += c.Add
		if s.Several() {
			s.Items = slices.Clone(s.Items)
			s.Items[slices.IndexFunc(s.Items, func(i Item) bool { return i.SKUID == it.SKUID })].TotalStock += c.Add
		}
		return c.Add, nil
	case ActionUpdate:
		if !now.Before(s.StartAt) {
			return 0, Errorf(ECONFLICT, "session %d has started: only pause, resume, end and stock changes apply now", s.ID)
		}
		if c.Update.changesRegistration() && s.Registers() && !now.Before(s.RegisterFrom) {
			return 0, Errorf(ECONFLICT, "session %d opened its registration at %s: its mode and window no longer change",
				s.ID, s.RegisterFrom.UTC().Format(time.RFC3339))
		}
		if c.Update.Mode != nil && *c.Update.Mode != s.Mode && !s.PreheatedAt.IsZero() {
			// The preheat loaded what the mode needs (a reserved sale's
			// registrants) and the session's workflow decides by it.
			return 0, Errorf(ECONFLICT, "session %d was preheated at %s: its mode no longer changes",
				s.ID, s.PreheatedAt.UTC().Format(time.RFC3339))
		}
		next, err := c.Update.Apply(c.Update.registrationDefaults(*s, now))
		if err != nil {
			return 0, err
		}
		*s = *next
	}
	return 0, nil
}

// SameRequest reports whether o asks for what c asks (the action and its
// arguments, not who or when): a change retried under its request id must
// ask the same, or it is refused with IDEMPOTENCY_MISMATCH instead of being
// answered as the replay of another change.
func (c *SessionChange) SameRequest(o *SessionChange) bool {
	type request struct {
		SessionID int64
		Action    SessionAction
		Add       int
		SKUID     int64
		Update    *SessionUpdate
		OrderNo   string
		Reason    string
	}
	key := func(x *SessionChange) string {
		b, _ := json.Marshal(request{x.SessionID, x.Action, x.Add, x.SKUID, x.Update, x.OrderNo, x.Reason})
		return string(b)
	}
	return key(c) == key(o)
}
