package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
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
	var r admitResult
	if g.Coalesce {
		r = g.coalescerFor(a.Session.ID).submit(ctx, &admitCall{ctx: ctx, a: a, done: make(chan admitResult, 1)})
	} else {
		res, err := g.runAdmit(ctx, a.Session.ID, []*seckill.Attempt{a})
		if err != nil {
			r.err = err
		} else {
			r = res[0]
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return g.admission(a, r)
}

// admission turns the script's answer to a into the vocabulary.
func (g *Gate) admission(a *seckill.Attempt, r admitResult) (*seckill.Admission, error) {
	s := a.Session
	replayed := r.orderNo != a.OrderNo
	adm := &seckill.Admission{OrderNo: r.orderNo, Left: int(r.left), Replayed: replayed}
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
		if s.Mode == seckill.ModeDraw {
			return adm, seckill.Errorf(seckill.ENOTELIGIBLE, "session %d sells only to the holders of a drawn right, once each, until it lapses", s.ID)
		}
		return adm, seckill.Errorf(seckill.ENOTELIGIBLE, "session %d sells only to the shoppers who registered before %s",
			s.ID, s.RegisterUntil.UTC().Format(time.RFC3339))
	default:
		return nil, fmt.Errorf("admit script returned code %d", r.code)
	}
	switch {
	case !replayed:
		// What the script just wrote, without reading it back.
		adm.Reservation = ReservationRecord{UserID: a.UserID, Quantity: a.Quantity, Mask: r.mask, At: a.Now, TraceID: a.TraceID}.
			Reservation(s.ID, a.OrderNo)
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
	return g.pinned(ctx, a, false)
}

// PinnedOrRefused is Pinned for a session sold out: a key without a pin
// gets the refusal the admission script would give it, decided the same
// way (its time against the stamps, then the shopper's holdings against
// the limit, then no stock), so that it hears the same answer whichever
// of the two answers it. Reads only.
func (g *Gate) PinnedOrRefused(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	return g.pinned(ctx, a, true)
}

func (g *Gate) pinned(ctx context.Context, a *seckill.Attempt, refuse bool) (*seckill.Admission, error) {
	if a.IdempotencyKey == "" {
		return nil, nil
	}
	k := g.keys(a.Session.ID)
	user := strconv.FormatInt(a.UserID, 10)
	field := "k:" + user + ":" + a.IdempotencyKey
	// One round trip on the common path (a sold-out flood whose clicks
	// carry keys): the pin, the stock, and what a refusal is decided by.
	var pin, stock, held *goredis.StringCmd
	var stamps *goredis.SliceCmd
	err := retry(ctx, func(ctx context.Context) error {
		_, err := g.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
			pin, stock = p.HGet(ctx, k.idem, field), p.Get(ctx, k.stock)
			if refuse {
				stamps, held = p.HMGet(ctx, k.idem, "f:"+user, "m:reopened"), p.HGet(ctx, k.buyers, user)
			}
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
	if errors.Is(err, goredis.Nil) && refuse {
		return nil, refusal(a, stamps.Val(), held.Val())
	}
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

// refusal is the admission script's refusal of a keyed attempt without a
// pin in a session without stock, decided in admit.lua's order: its
// shopper's holdings went down since the key's time minus the skew, or
// are at the limit now: LIMIT_EXCEEDED; otherwise SOLD_OUT.
func refusal(a *seckill.Attempt, stamps []any, held string) error {
	since := int64(0)
	if !a.KeyTime.IsZero() {
		since = a.KeyTime.UnixMilli()
	}
	since -= seckill.KeyClockSkew.Milliseconds()
	stampedSince := func(v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return err == nil && n >= since
	}
	limit := seckill.Errorf(seckill.ELIMIT, "at most %d per shopper in this sale", a.Session.PerUserLimit)
	if h, _ := strconv.Atoi(held); (len(stamps) == 2 && stampedSince(stamps[0])) || h+a.Quantity > a.Session.PerUserLimit {
		return limit
	}
	return errSoldOut
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
	args := make([]any, 0, 3+9*len(attempts))
	args = append(args, len(attempts), seckill.KeyClockSkew.Milliseconds(), gated)
	for _, a := range attempts {
		var kt int64
		if !a.KeyTime.IsZero() {
			kt = a.KeyTime.UnixMilli()
		}
		args = append(args, a.UserID, a.Quantity, a.Session.PerUserLimit, a.OrderNo, a.Now.UnixMilli(),
			a.TraceID, a.IdempotencyKey, a.Fingerprint, kt)
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
	if len(raw) != 5*len(attempts) {
		return nil, fmt.Errorf("admit script returned %d values for %d attempts", len(raw), len(attempts))
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
		out[i] = admitResult{code: admitCode(code), left: left, mask: mask, orderNo: no, resv: resv}
	}
	return out, nil
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

// Concurrent admissions of one session are coalesced into one script call
// (group commit, as databases batch fsyncs): while a call is in flight, the
// attempts that arrive queue up and go together in the next one. An idle
// gate adds no wait (a lone attempt goes at once); a busy one pays one round
// trip per batch instead of one per attempt. The script decides each
// attempt in arrival order exactly as if it ran alone.

// maxAdmitBatch bounds one script call (Redis runs it without interruption).
const maxAdmitBatch = 256

type admitCall struct {
	ctx  context.Context
	a    *seckill.Attempt
	done chan admitResult
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
	err           error
}

type coalescer struct {
	g         *Gate
	sessionID int64
	mu        sync.Mutex
	queue     []*admitCall
	busy      bool
}

func (g *Gate) coalescerFor(sessionID int64) *coalescer {
	if c, ok := g.coalescers.Load(sessionID); ok {
		return c.(*coalescer)
	}
	c, _ := g.coalescers.LoadOrStore(sessionID, &coalescer{g: g, sessionID: sessionID})
	return c.(*coalescer)
}

// submit queues one attempt and waits for its result.
func (c *coalescer) submit(ctx context.Context, call *admitCall) admitResult {
	c.mu.Lock()
	c.queue = append(c.queue, call)
	if !c.busy {
		c.busy = true
		go c.drain()
	}
	c.mu.Unlock()
	select {
	case r := <-call.done:
		return r
	case <-ctx.Done():
		// The attempt may still run with its batch (unless the batch sees
		// the caller gone first and leaves it out); its reservation then
		// has a pending-start entry, and the relay makes it an order. The
		// outcome is unknown: never claim it was refused.
		return admitResult{err: unknownOutcome(ctx.Err())}
	}
}

// drain sends the queue in batches until it is empty.
func (c *coalescer) drain() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		n := min(len(c.queue), maxAdmitBatch)
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.run(batch)
	}
}

func (c *coalescer) run(batch []*admitCall) {
	// Callers that gave up while queued are left out: their attempt then
	// certainly did not run, and a retry with the same key runs afresh.
	live := batch[:0:0]
	for _, call := range batch {
		if call.ctx.Err() == nil {
			live = append(live, call)
		}
	}
	if len(live) == 0 {
		return
	}
	// Not the callers' contexts: a batch serves many callers.
	ctx, cancel := context.WithTimeout(context.Background(), admitBudget)
	defer cancel()
	attempts := make([]*seckill.Attempt, len(live))
	for i, call := range live {
		attempts[i] = call.a
	}
	res, err := c.g.runAdmit(ctx, c.sessionID, attempts)
	for i, call := range live {
		if err != nil {
			call.done <- admitResult{err: err}
			continue
		}
		call.done <- res[i]
	}
}

// ReservationRecord is a reservation as a session's resv hash stores it
// under its order number: "user|qty|mask|unix ms|trace". admit.lua writes
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
	At      time.Time
	TraceID string
}

// NewReservationRecord is the record of r.
func NewReservationRecord(r *seckill.Reservation) ReservationRecord {
	return ReservationRecord{UserID: r.UserID, Quantity: r.Quantity, Mask: slotsMask(r.Slots), At: r.ReservedAt, TraceID: r.TraceID}
}

// Encode is the record as the scripts store it.
func (r ReservationRecord) Encode() string {
	return fmt.Sprintf("%d|%d|%d|%d|%s", r.UserID, r.Quantity, r.Mask, r.At.UnixMilli(), r.TraceID)
}

// ParseReservationRecord decodes what Encode or admit.lua wrote.
func ParseReservationRecord(raw string) (ReservationRecord, error) {
	f := strings.SplitN(raw, "|", 5)
	if len(f) != 5 {
		return ReservationRecord{}, fmt.Errorf("malformed reservation record %q", raw)
	}
	user, err1 := strconv.ParseInt(f[0], 10, 64)
	qty, err2 := strconv.Atoi(f[1])
	mask, err3 := strconv.ParseInt(f[2], 10, 64)
	ms, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return ReservationRecord{}, fmt.Errorf("reservation record %q: %w", raw, err)
	}
	return ReservationRecord{UserID: user, Quantity: qty, Mask: mask, At: time.UnixMilli(ms).UTC(), TraceID: f[4]}, nil
}

// Reservation is the record as the reservation of order orderNo in session sessionID.
func (r ReservationRecord) Reservation(sessionID int64, orderNo string) *seckill.Reservation {
	return &seckill.Reservation{
		OrderNo: orderNo, SessionID: sessionID, UserID: r.UserID, Quantity: r.Quantity,
		Slots: maskSlots(r.Mask), ReservedAt: time.UnixMilli(r.At.UnixMilli()).UTC(), TraceID: r.TraceID,
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
