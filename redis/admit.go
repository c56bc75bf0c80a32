package redis

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

// Admission is one step for Redis: an attempt (or the concurrent attempts
// of a session, coalesced into one call) runs admit.lua, whose numbered
// verdict (admitCode) becomes the error vocabulary here. A keyed attempt
// that must not reach the script (the sale paused, ended or sold out)
// reads the answer pinned to its key instead (Pinned, PinnedOrRefused).
// The reservations the script writes are ReservationRecords.

// admitBudget bounds one admission script call with its retries.
const admitBudget = 3 * time.Second

// unknownOutcome is the failure of an attempt that may or may not have run:
// the script's reply was lost (timeouts) or the caller stopped waiting. The
// same attempt run again (same order number, same Idempotency-Key) tells.
func unknownOutcome(err error) error {
	return fmt.Errorf("%w (redis: %v)", seckill.Errorf(seckill.EUNAVAILABLE,
		"the stock service did not answer in time; retry with the same Idempotency-Key to learn the outcome"), err)
}

// Admit runs the admission script for one purchase attempt without an
// Idempotency-Key; see AdmitAttempt.
func (g *Gate) Admit(ctx context.Context, s *seckill.Session, userID int64, qty int, orderNo, traceID string, now time.Time) (*seckill.Reservation, int, error) {
	adm, err := g.AdmitAttempt(ctx, &seckill.Attempt{Session: s, UserID: userID, Quantity: qty,
		OrderNo: orderNo, TraceID: traceID, Now: now, Fingerprint: strconv.Itoa(qty)})
	if adm == nil {
		return nil, 0, err
	}
	return adm.Reservation, adm.Left, err
}

// AdmitAttempt runs the admission script for one purchase attempt. On
// success the units are deducted and the reservation, its pending-start
// entry and its idempotency records are written, atomically. Losers get
// SOLD_OUT or LIMIT_EXCEEDED (with the stock left), a key reused with
// another body IDEMPOTENCY_MISMATCH, an unpreheated session UNAVAILABLE.
// An attempt whose outcome is unknown (Redis did not answer within the
// retries) is UNAVAILABLE: running it again tells.
func (g *Gate) AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	r := g.call(ctx, a)
	if r.err != nil {
		return nil, r.err
	}
	return g.admission(a, r)
}

// call runs a through the admission script: coalesced with the session's
// other attempts (and lookups) when the gate coalesces, alone otherwise.
func (g *Gate) call(ctx context.Context, a *seckill.Attempt) admitResult {
	if g.Coalesce {
		return g.submit(ctx, &admitCall{ctx: ctx, a: a, done: make(chan admitResult, 1)})
	}
	res, err := g.runAdmit(ctx, a.Session.ID, []*seckill.Attempt{a})
	if err != nil {
		return admitResult{err: err}
	}
	return res[0]
}

// admission turns the script's answer to a into the vocabulary.
func (g *Gate) admission(a *seckill.Attempt, r admitResult) (*seckill.Admission, error) {
	s := a.Session
	replayed := r.orderNo != a.OrderNo
	adm := &seckill.Admission{OrderNo: r.orderNo, Left: int(r.left), Replayed: replayed, SoldOut: r.mark}
	switch r.code {
	case codeReserved:
	case codeSoldOut:
		return adm, errSoldOut
	case codeOverLimit:
		return adm, seckill.Errorf(seckill.ELIMIT, "at most %d per shopper in this sale", s.PerUserLimit)
	case codeNotPreheated:
		return adm, seckill.Errorf(seckill.EUNAVAILABLE, "session %d is not preheated yet", s.ID)
	case codeOrderNoTaken:
		return adm, seckill.Errorf(seckill.ECONFLICT, "order number %s already reserved", a.OrderNo)
	case codeKeyMismatch:
		return adm, seckill.Errorf(seckill.EIDEMPOTENCY,
			"this Idempotency-Key was used with another request body (order %s); use a new key for a new purchase", r.orderNo)
	case codeKeyAhead:
		return adm, seckill.Errorf(seckill.EINVALID,
			"the Idempotency-Key is a UUIDv7 stamped %s, ahead of the server's clock by more than %s: stamp keys with the current time",
			a.KeyTime.UTC().Format(time.RFC3339Nano), seckill.KeyClockSkew)
	case codeNotEligible:
		// In a sale of sizes a registration, and so a right, is for one.
		item := ""
		if a.SKUID != 0 {
			item = fmt.Sprintf(" item %d", a.SKUID)
		}
		if s.Mode == seckill.ModeDraw {
			return adm, seckill.Errorf(seckill.ENOTELIGIBLE, "session %d sells%s only to the holders of a drawn right for it, once each, until it lapses", s.ID, item)
		}
		return adm, seckill.Errorf(seckill.ENOTELIGIBLE, "session %d sells%s only to the shoppers who registered for it before %s",
			s.ID, item, s.RegisterUntil.UTC().Format(time.RFC3339))
	default:
		return nil, fmt.Errorf("admit script returned code %d", r.code)
	}
	switch {
	case !replayed:
		// What the script just wrote, without reading it back.
		adm.Reservation = ReservationRecord{UserID: a.UserID, Quantity: a.Quantity, Mask: r.mask, At: a.Now, SKUID: a.SKUID,
			TraceID: a.TraceID, SpanID: a.SpanID}.Reservation(s.ID, a.OrderNo)
	case r.resv != "":
		resv, err := parseReservation(s.ID, r.orderNo, r.resv)
		if err != nil {
			return nil, err
		}
		adm.Reservation = resv
	}
	return adm, nil
}

// Pinned returns the answer pinned to a's Idempotency-Key without
// deciding anything (nil, nil when the key has none): for the paths that
// would refuse before the script runs (the session is paused, or the sale
// has ended) but must not contradict an answer the key already got.
func (g *Gate) Pinned(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	return g.pinned(ctx, a)
}

// PinnedOrRefused is Pinned for a session sold out: a key without a pin
// gets the refusal the admission script would give it, decided the same
// way (its shopper's holdings against the stamps and the limit, then no
// stock), so that it hears the same answer whichever of the two answers
// it. It runs in the admission script as a lookup (no order number: it
// reads only), coalesced with the session's other calls: the keyed losers
// of a sell-out's first second cost a share of one round trip each, not
// one round trip each.
func (g *Gate) PinnedOrRefused(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	if a.IdempotencyKey == "" {
		return nil, nil
	}
	look := *a
	look.OrderNo = "" // a lookup; whatever was pinned, it is a replay
	r := g.call(ctx, &look)
	switch {
	case r.err != nil:
		return nil, r.err
	case r.orderNo == "":
		// No pin: the refusal, with the mark that says the sale is sold out.
		adm, err := g.admission(&look, r)
		if err == nil {
			err = fmt.Errorf("admission lookup of %s returned code %d", a.TraceID, r.code)
		}
		return adm, err
	}
	return g.admission(&look, r)
}

func (g *Gate) pinned(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	if a.IdempotencyKey == "" {
		return nil, nil
	}
	k := g.keys(a.Session.ID)
	user := strconv.FormatInt(a.UserID, 10)
	field := "k:" + user + ":" + a.IdempotencyKey
	// One round trip: the pin and the stock.
	var pin, stock *goredis.StringCmd
	err := retry(ctx, func(ctx context.Context) error {
		_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			pin, stock = p.HGet(ctx, k.idem, field), p.Get(ctx, k.stock)
			return nil
		})
		if errors.Is(err, goredis.Nil) {
			return nil // one of them is missing: read below
		}
		return err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	raw, err := pin.Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	} else if err != nil {
		return nil, unavailable(err)
	}
	f := strings.Split(raw, "|")
	if len(f) != 4 {
		return nil, fmt.Errorf("idempotency record %s: malformed %q", field, raw)
	}
	code, err1 := strconv.ParseInt(f[1], 10, 64)
	mask, err2 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("idempotency record %s: %w", field, err)
	}
	r := admitResult{code: admitCode(code), mask: mask, orderNo: f[2]}
	if f[0] != a.Fingerprint {
		r.code, r.mask = codeKeyMismatch, 0
	}
	if r.code == codeReserved {
		// As the script does: the reservation only while its start is
		// pending, so a replay never starts a started order again.
		resv, err := idempotent(ctx, func(ctx context.Context) (string, error) {
			if err := g.rdb.ZScore(ctx, k.pending, r.orderNo).Err(); err != nil {
				return "", err
			}
			return g.rdb.HGet(ctx, k.resv, r.orderNo).Result()
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, unavailable(err)
		}
		r.resv = resv
	}
	if left, err := stock.Int64(); err == nil {
		r.left = left
	}
	a2 := *a
	a2.OrderNo = "" // whatever was pinned, it is a replay
	return g.admission(&a2, r)
}

var errSoldOut = seckill.Errorf(seckill.ESOLDOUT, "sold out")

// runAdmit runs the admission script for attempts of one session, retrying
// on failures whose outcome is unknown: the script is idempotent (an
// attempt run again with the same order number and key answers as its
// first run did), so a retry learns the truth instead of deciding twice.
func (g *Gate) runAdmit(ctx context.Context, sessionID int64, attempts []*seckill.Attempt) ([]admitResult, error) {
	gated := "0"
	switch s := attempts[0].Session; {
	case s.Mode == seckill.ModeDraw:
		gated = "2"
	case s.AdmitsRegistrants():
		gated = "1"
	}
	args := make([]any, 0, 3+10*len(attempts))
	args = append(args, len(attempts), seckill.KeyClockSkew.Milliseconds(), gated)
	for _, a := range attempts {
		var kt int64
		if !a.KeyTime.IsZero() {
			kt = a.KeyTime.UnixMilli()
		}
		args = append(args, a.UserID, a.Quantity, a.Session.PerUserLimit, a.OrderNo, a.Now.UnixMilli(),
			ReservationRecord{TraceID: a.TraceID, SpanID: a.SpanID}.trace(), a.IdempotencyKey, a.Fingerprint, kt, itemRecord(a.SKUID))
	}
	var raw []any
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		raw, err = admitScript.Run(ctx, g.rdb, g.keys(sessionID).script(), args...).Slice()
		return err
	})
	if err != nil {
		if retryable(err) || ctx.Err() != nil {
			return nil, unknownOutcome(err)
		}
		return nil, unavailable(err)
	}
	if len(raw) != 5*len(attempts)+4 {
		return nil, fmt.Errorf("admit script returned %d values for %d attempts", len(raw), len(attempts))
	}
	var mark *seckill.StockMark
	m, ok := stockMark(raw[len(raw)-4:])
	if !ok {
		return nil, fmt.Errorf("admit script returned the mark %v", raw[len(raw)-4:])
	}
	if m.Stock == 0 {
		mark = &m
	}
	out := make([]admitResult, len(attempts))
	for i := range out {
		v := raw[5*i : 5*i+5]
		code, ok1 := v[0].(int64)
		left, ok2 := v[1].(int64)
		mask, ok3 := v[2].(int64)
		no, ok4 := v[3].(string)
		resv, ok5 := v[4].(string)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, fmt.Errorf("admit script returned %v", v)
		}
		out[i] = admitResult{code: admitCode(code), left: left, mask: mask, orderNo: no, resv: resv, mark: mark}
	}
	return out, nil
}

// admitCode is admit.lua's verdict on one attempt, as the script numbers
// it (and as it pins it under an Idempotency-Key).
type admitCode int64

const (
	codeReserved     admitCode = 0
	codeSoldOut      admitCode = -1
	codeOverLimit    admitCode = -2 // the per-user limit
	codeNotPreheated admitCode = -3
	codeOrderNoTaken admitCode = -4 // the order number holds another reservation
	codeKeyMismatch  admitCode = -5 // the Idempotency-Key was pinned by another body
	codeKeyAhead     admitCode = -6 // the key's UUIDv7 time is ahead of Redis's clock by more than the skew
	codeNotEligible  admitCode = -7 // a reserved sale, and the shopper did not register
)

// admitResult is one attempt's decision as the script returned it.
type admitResult struct {
	code          admitCode
	left, mask    int64
	orderNo, resv string
	// mark is the sale as the call left it, when without stock (nil
	// otherwise): the sold-out memory's mark from the sell-out itself.
	mark *seckill.StockMark
	err  error
}

// maskSlots turns the script's slot mask (bit i = slot i+1) into slot numbers.
func maskSlots(mask int64) []int {
	var out []int
	for i := 0; i < seckill.MaxPerUserLimit; i++ {
		if mask&(1<<i) != 0 {
			out = append(out, i+1)
		}
	}
	return out
}

func slotsMask(slots []int) int64 {
	var m int64
	for _, s := range slots {
		m |= 1 << (s - 1)
	}
	return m
}

// ReservationRecord is a reservation as a session's resv hash stores it
// under its order number: "user|qty|mask|unix ms|trace", the time
// followed by ":<sku>" in a sale of several items. admit.lua writes
// it and release.lua reads its first three fields; in Go every writer and
// reader goes through Encode and ParseReservationRecord (a test runs both
// scripts against them). The trace id comes last and may contain '|'.
type ReservationRecord struct {
	UserID   int64
	Quantity int
	// Mask is the slots the reservation holds (bit i = slot i+1), as the
	// script hands them out.
	Mask int64
	// At is when it was reserved, to the millisecond.
	At time.Time
	// SKUID is the item reserved in a sale of several items (0 otherwise).
	SKUID   int64
	TraceID string
	// SpanID is the traced purchase's span, stored after the trace id
	// as "<trace id>/<span id>" when there is one.
	SpanID string
}

// NewReservationRecord is the record of r.
func NewReservationRecord(r *seckill.Reservation) ReservationRecord {
	return ReservationRecord{UserID: r.UserID, Quantity: r.Quantity, Mask: slotsMask(r.Slots), At: r.ReservedAt, TraceID: r.TraceID, SpanID: r.SpanID}
}

// itemRecord is how a record names its item: after its time (itemRecord
// of 0 is none).
func itemRecord(sku int64) string {
	if sku == 0 {
		return ""
	}
	return strconv.FormatInt(sku, 10)
}

// Encode is the record as the scripts store it.
func (r ReservationRecord) Encode() string {
	at := strconv.FormatInt(r.At.UnixMilli(), 10)
	if r.SKUID != 0 {
		at += ":" + itemRecord(r.SKUID)
	}
	return fmt.Sprintf("%d|%d|%d|%s|%s", r.UserID, r.Quantity, r.Mask, at, r.trace())
}

// trace is the record's last field: the trace id, and the span's after a
// slash when there is one.
func (r ReservationRecord) trace() string {
	if r.SpanID == "" {
		return r.TraceID
	}
	return r.TraceID + "/" + r.SpanID
}

// spanSuffix is a span id after the trace id of the W3C shape, as trace
// writes it (a trace id of older records is any token: left whole).
var spanSuffix = regexp.MustCompile(`^([0-9a-f]{32})/([0-9a-f]{16})$`)

// ParseReservationRecord decodes what Encode or admit.lua wrote.
func ParseReservationRecord(raw string) (ReservationRecord, error) {
	f := strings.SplitN(raw, "|", 5)
	if len(f) != 5 {
		return ReservationRecord{}, fmt.Errorf("malformed reservation record %q", raw)
	}
	user, err1 := strconv.ParseInt(f[0], 10, 64)
	qty, err2 := strconv.Atoi(f[1])
	mask, err3 := strconv.ParseInt(f[2], 10, 64)
	at, item, several := strings.Cut(f[3], ":")
	ms, err4 := strconv.ParseInt(at, 10, 64)
	var sku int64
	var err5 error
	if several {
		sku, err5 = strconv.ParseInt(item, 10, 64)
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return ReservationRecord{}, fmt.Errorf("reservation record %q: %w", raw, err)
	}
	rec := ReservationRecord{UserID: user, Quantity: qty, Mask: mask, At: time.UnixMilli(ms).UTC(), SKUID: sku, TraceID: f[4]}
	if m := spanSuffix.FindStringSubmatch(f[4]); m != nil {
		rec.TraceID, rec.SpanID = m[1], m[2]
	}
	return rec, nil
}

// Reservation is the record as the reservation of order orderNo in session sessionID.
func (r ReservationRecord) Reservation(sessionID int64, orderNo string) *seckill.Reservation {
	return &seckill.Reservation{
		OrderNo: orderNo, SessionID: sessionID, UserID: r.UserID, Quantity: r.Quantity,
		Slots: maskSlots(r.Mask), ReservedAt: time.UnixMilli(r.At.UnixMilli()).UTC(), TraceID: r.TraceID, SpanID: r.SpanID,
		SKUID: r.SKUID,
	}
}

// parseReservation decodes the record of order orderNo in session sessionID.
func parseReservation(sessionID int64, orderNo, raw string) (*seckill.Reservation, error) {
	rec, err := ParseReservationRecord(raw)
	if err != nil {
		return nil, fmt.Errorf("reservation %s: %w", orderNo, err)
	}
	return rec.Reservation(sessionID, orderNo), nil
}
