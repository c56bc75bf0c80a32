package seckill

import "time"

// MaxIdempotencyKey is the longest Idempotency-Key accepted (Stripe's
// convention allows 255; 64 keeps the per-session record small).
const MaxIdempotencyKey = 64

// Attempt is one purchase attempt as the admission script decides it.
type Attempt struct {
	Session  *Session
	UserID   int64
	Quantity int
	// OrderNo is the number the units are reserved under if the attempt
	// wins. Running the same attempt again (same order number) answers as
	// the first run did and changes nothing.
	OrderNo string
	TraceID string
	Now     time.Time
	// IdempotencyKey, when set, pins the attempt's answer for the whole
	// sale: every later attempt of the same user in the same session with
	// the same key gets that answer (and order number) instead of running.
	IdempotencyKey string
	// Fingerprint is the attempt's normalized body; a key reused with
	// another fingerprint is refused with EIDEMPOTENCY.
	Fingerprint string
}

// Admission is what admission answered to an attempt that was not
// refused: the units are held under OrderNo.
type Admission struct {
	OrderNo string
	// Reservation is the live reservation of OrderNo (whose workflow the
	// caller starts, idempotently); nil on a replay whose reservation has
	// already become an order or was released.
	Reservation *Reservation
	// Left is the session's stock after the attempt.
	Left int
	// Replayed is set when the answer was pinned by an earlier attempt
	// with the same Idempotency-Key: nothing changed now.
	Replayed bool
}
