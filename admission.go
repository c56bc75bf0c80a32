package seckill

import (
	"time"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted (Stripe's
// convention allows 255; 64 keeps the per-session record small).
const MaxIdempotencyKey = 64

// CheckIdempotencyKey refuses a key (named by header) that is not 1 to
// MaxIdempotencyKey printable ASCII characters: it is kept in Redis and
// MySQL and shown in logs as sent.
func CheckIdempotencyKey(header, k string) error {
	bad := k == "" || len(k) > MaxIdempotencyKey
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e
	}
	if bad {
		return Errorf(EINVALID, "%s must be 1 to %d printable ASCII characters (a UUID is a good key)", header, MaxIdempotencyKey)
	}
	return nil
}

// Attempt is one purchase attempt as the admission script decides it.
type Attempt struct {
	Session  *Session
	UserID   int64
	Quantity int
	// SKUID is the item bought in a sale of several items (0 in a
	// single-SKU sale).
	SKUID int64
	// OrderNo is the number the units are reserved under if the attempt
	// wins. Running the same attempt again (same order number) answers as
	// the first run did and changes nothing.
	OrderNo string
	TraceID string
	// SpanID is the purchase's span when it is traced (hex, "" when
	// not): the reservation keeps it, so that the order's workflow starts
	// under it whenever the start is made.
	SpanID string
	Now    time.Time
	// IdempotencyKey, when set, pins the attempt's answer for the whole
	// sale: every later attempt of the same user in the same session with
	// the same key gets that answer (and order number) instead of running.
	IdempotencyKey string
	// Fingerprint is the attempt's normalized body; a key reused with
	// another fingerprint is refused with EIDEMPOTENCY.
	Fingerprint string
	// KeyTime is the creation time the key carries (a UUIDv7, see
	// admission.KeyTime), zero for a key that carries none.
	KeyTime time.Time
}

// KeyClockSkew is how far a time-ordered Idempotency-Key may be stamped
// ahead of the server's clock, and so how long before a key's time a
// change that could turn a refusal into a win counts against it.
//
// Only a key that won is stored (bounded by the stock); a refused key is
// not, so that a flood of keyed losers costs Redis no memory. What keeps a
// refused key refused is its time: a key without a reservation is refused
// again whenever units came back to the sale (or its shopper's holdings
// went down) after KeyTime − KeyClockSkew, the earliest moment it can
// have been first seen. A key that carries no time counts as older than
// every such change.
const KeyClockSkew = time.Second

// StockMark is a session's Redis stock as one read saw it, for the
// in-memory sold-out answer to keyed requests (admission.SoldOut).
type StockMark struct {
	// Stock is -1 when the session is not in Redis.
	Stock int
	// Clock is Redis's clock when it read the stock.
	Clock time.Time
	// LastKeyedWin is when the session's latest keyed reservation was
	// made (Redis's clock; zero: none yet). A key stamped more than
	// KeyClockSkew after it cannot hold one.
	LastKeyedWin time.Time
	// Reopened is when the stock (the session's, or the item's for an
	// item's mark) last rose from below the per-user limit (Redis's clock;
	// zero: never): a win may have followed it, on any process, that no
	// keyed win stamps.
	Reopened time.Time
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
	// SoldOut is the sale as the step that answered left it, when it left
	// it without stock (nil otherwise): the sold-out memory's mark known
	// from the sell-out itself rather than from its next read.
	SoldOut *StockMark
}
