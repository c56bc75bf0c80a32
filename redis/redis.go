// Package redis is the Redis adapter: the fast gate in front of MySQL. It
// holds each session's stock, per-user marks, reservations and
// pending-start entries under one hash tag, changes them only through the
// embedded Lua scripts (so every decision is one atomic step, also on Redis
// Cluster), and caches order views for the hot poll path.
//
// # Retries: decided per command
//
// A reply that does not come back in time (ReadTimeout) leaves the outcome
// unknown: the command may have run. go-redis would send it again by
// itself; NewClient turns that off (MaxRetries -1) and the gate retries
// (retry: up to 4 attempts, 25–250 ms backoff, only on timeouts, dropped
// connections and LOADING/BUSY/TRYAGAIN-like answers) exactly the commands
// that are idempotent:
//
//	command                        idempotent because                          retried
//	admit.lua (Admit*)             same order number → the first run's answer  yes, same order numbers and keys;
//	                               (o: record); same key → the pinned answer   then 503 UNAVAILABLE, outcome unknown
//	                               (k: record)
//	release.lua (Release)          deleting the reservation is its guard       yes
//	putorder.lua (PutOrder)        keeps the newest version only               yes
//	SET NX GET (ConsumeTicket)     the value names the owner; a match is ours  yes
//	reads (Stock, Order, Pending,  reads                                       yes
//	  Pinned, Sessions, Backlog…)
//	ZREM (Started), SADD + SETNX   set semantics                               yes
//	  (Preheat), ZADD XX (Hold)
//	redis_rate script (Limiter)    no: every run takes a token                 never: 503, the client retries
//	MULTI rebuild (Rebuild)        no: a re-run would drop reservations made   never: the admin runs it again
//	                               since the first
//	snapshot.lua (SessionSnapshot) a read-only script: one instant per run     yes
//	addstock.lua (AddStock)        the request id is recorded with the units   yes
//	fleet.lua (Fleet.Beat)         sets the member's expiry; a re-run moves it  yes
//	                               by the retry's delay, well within its ttl
//	ZREM (Fleet.Leave)             set semantics                               yes
//	EXPIRE + SREM (Retire)         a second EXPIRE only restarts the ttl       yes
//	SET, GET (Captchas.Put, Peek)  set and read                                yes
//	GETDEL (Captchas.Take)         no: the first run used the captcha up       never: the shopper fetches a new one
//	HSCAN + HMGET (Unsettled)      reads                                       yes
//
// # Redis Cluster
//
// The client is go-redis's universal one (NewClient): a single node, a
// Cluster or Sentinel failover. Every key a script, MULTI or pipeline
// touches carries the session's hash tag, so each runs on one slot; the
// scripts take all their keys in KEYS. On a Cluster the table above holds
// too: a hook keeps the cluster client from re-sending a command whose
// reply was lost (client.go). docs/ARCHITECTURE.md ("Redis Cluster") lists
// the keys and what a failover can lose.
package redis

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill"
)

var (
	//go:embed admit.lua
	admitSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed putorder.lua
	putOrderSrc string
	//go:embed snapshot.lua
	snapshotSrc string
	//go:embed addstock.lua
	addStockSrc string
	//go:embed preheat.lua
	preheatSrc string
	//go:embed retire.lua
	retireSrc string
	//go:embed stockmark.lua
	stockMarkSrc string

	admitScript     = goredis.NewScript(admitSrc)
	releaseScript   = goredis.NewScript(releaseSrc)
	putOrderScript  = goredis.NewScript(putOrderSrc)
	snapshotScript  = goredis.NewScript(snapshotSrc)
	addStockScript  = goredis.NewScript(addStockSrc)
	preheatScript   = goredis.NewScript(preheatSrc)
	retireScript    = goredis.NewScript(retireSrc)
	stockMarkScript = goredis.NewScript(stockMarkSrc)
)

// Gate is the Redis side of admission.
type Gate struct {
	rdb    goredis.UniversalClient
	prefix string
	// Coalesce batches concurrent admissions of a session into one script
	// call (see coalesce.go); on by default.
	Coalesce   bool
	coalescers sync.Map // session id → *coalescer
}

// New returns a gate whose keys all start with prefix.
func New(rdb goredis.UniversalClient, prefix string) *Gate {
	return &Gate{rdb: rdb, prefix: prefix, Coalesce: true}
}

// Load preloads the scripts so that admission runs EVALSHA from the first
// request (go-redis falls back to EVAL on NOSCRIPT anyway, e.g. after a
// Redis restart).
func (g *Gate) Load(ctx context.Context) error {
	for _, s := range []*goredis.Script{admitScript, releaseScript, putOrderScript, snapshotScript} {
		if err := s.Load(ctx, g.rdb).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// Ping checks that Redis answers.
func (g *Gate) Ping(ctx context.Context) error { return g.rdb.Ping(ctx).Err() }

// sessionKeys are the keys of one session, in the order the scripts take them.
type sessionKeys struct{ base, stock, buyers, resv, pending, idem, orders, stockOps string }

func (g *Gate) keys(sessionID int64) sessionKeys {
	// {s<id>} is the hash tag: every key of a session lands in one slot.
	base := fmt.Sprintf("%s:{s%d}:", g.prefix, sessionID)
	return sessionKeys{base, base + "stock", base + "buyers", base + "resv", base + "pending", base + "idem", base + "orders", base + "stockops"}
}

func (k sessionKeys) script() []string {
	return []string{k.stock, k.buyers, k.resv, k.pending, k.idem}
}

// unavailable wraps an infrastructure failure of Redis in the error vocabulary.
func unavailable(err error) error {
	return fmt.Errorf("%w (redis: %v)", seckill.Errorf(seckill.EUNAVAILABLE, "stock service unavailable, retry shortly"), err)
}

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
	case 0:
	case -1:
		return adm, errSoldOut
	case -2:
		return adm, seckill.Errorf(seckill.ELIMIT, "at most %d per shopper in this sale", s.PerUserLimit)
	case -3:
		return adm, seckill.Errorf(seckill.EUNAVAILABLE, "session %d is not preheated yet", s.ID)
	case -4:
		return adm, seckill.Errorf(seckill.ECONFLICT, "order number %s already reserved", a.OrderNo)
	case -5:
		return adm, seckill.Errorf(seckill.EIDEMPOTENCY,
			"this Idempotency-Key was used with another request body (order %s); use a new key for a new purchase", r.orderNo)
	case -6:
		return adm, seckill.Errorf(seckill.EINVALID,
			"the Idempotency-Key is a UUIDv7 stamped %s, ahead of the server's clock by more than %s: stamp keys with the current time",
			a.KeyTime.UTC().Format(time.RFC3339Nano), seckill.KeyClockSkew)
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
	r := admitResult{code: code, mask: mask, orderNo: f[2]}
	if f[0] != a.Fingerprint {
		r.code, r.mask = -5, 0
	}
	if r.code == 0 {
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
	args := make([]any, 0, 2+9*len(attempts))
	args = append(args, len(attempts), seckill.KeyClockSkew.Milliseconds())
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
		out[i] = admitResult{code: code, left: left, mask: mask, orderNo: no, resv: resv}
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

// Started removes the pending-start entry of a reservation whose workflow
// now exists, so the relay will not look at it again.
func (g *Gate) Started(ctx context.Context, sessionID int64, orderNo string) error {
	if err := retry(ctx, func(ctx context.Context) error {
		return g.rdb.ZRem(ctx, g.keys(sessionID).pending, orderNo).Err()
	}); err != nil {
		return unavailable(err)
	}
	return nil
}

// Hold renews the pending-start entries of orderNos as of at: a starter
// that holds them (queued or in flight) keeps the worker's relay, which
// starts only entries older than its minimum age, away from them. Only
// existing entries are touched (ZADD XX): a start that was confirmed
// meanwhile is not brought back. Idempotent, so retried.
func (g *Gate) Hold(ctx context.Context, sessionID int64, orderNos []string, at time.Time) error {
	if len(orderNos) == 0 {
		return nil
	}
	score := float64(at.UnixMilli())
	members := make([]goredis.Z, len(orderNos))
	for i, no := range orderNos {
		members[i] = goredis.Z{Score: score, Member: no}
	}
	if err := retry(ctx, func(ctx context.Context) error {
		return g.rdb.ZAddXX(ctx, g.keys(sessionID).pending, members...).Err()
	}); err != nil {
		return unavailable(err)
	}
	return nil
}

// Backlog returns how many orders of the session wait for their workflow
// start (its pending-start entries). Not a rank: a held entry's score is
// its last renewal, not its admission, so no order's place in the line can
// be read from it.
func (g *Gate) Backlog(ctx context.Context, sessionID int64) (int, error) {
	n, err := idempotent(ctx, func(ctx context.Context) (int64, error) {
		return g.rdb.ZCard(ctx, g.keys(sessionID).pending).Result()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return int(n), nil
}

// Pending returns up to limit reservations of a session whose
// pending-start entry is older than before, oldest first: reservations whose
// workflow start may have been lost. An entry whose reservation is gone
// (already released) is dropped.
func (g *Gate) Pending(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error) {
	k := g.keys(sessionID)
	nos, err := idempotent(ctx, func(ctx context.Context) ([]string, error) {
		return g.rdb.ZRangeByScore(ctx, k.pending, &goredis.ZRangeBy{
			Min: "-inf", Max: strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
		}).Result()
	})
	if err != nil {
		return nil, unavailable(err)
	}
	if len(nos) == 0 {
		return nil, nil
	}
	raws, err := idempotent(ctx, func(ctx context.Context) ([]any, error) { return g.rdb.HMGet(ctx, k.resv, nos...).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]seckill.Reservation, 0, len(nos))
	for i, no := range nos {
		raw, ok := raws[i].(string)
		if !ok {
			if err := retry(ctx, func(ctx context.Context) error { return g.rdb.ZRem(ctx, k.pending, no).Err() }); err != nil {
				return nil, unavailable(err)
			}
			continue
		}
		r, err := parseReservation(sessionID, no, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// PendingStats returns how many pending-start entries a session has and
// when the oldest was written (zero time when none).
func (g *Gate) PendingStats(ctx context.Context, sessionID int64) (int, time.Time, error) {
	k := g.keys(sessionID)
	n, err := g.rdb.ZCard(ctx, k.pending).Result()
	if err != nil {
		return 0, time.Time{}, unavailable(err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	first, err := g.rdb.ZRangeWithScores(ctx, k.pending, 0, 0).Result()
	if err != nil || len(first) == 0 {
		return int(n), time.Time{}, unavailable(err)
	}
	return int(n), time.UnixMilli(int64(first[0].Score)).UTC(), nil
}

// Release gives a reservation's units and the user's slots back, exactly
// once; it returns the units given back (0 when there was nothing to give).
func (g *Gate) Release(ctx context.Context, sessionID int64, orderNo string) (int, error) {
	// Idempotent: deleting the reservation is the script's guard.
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return releaseScript.Run(ctx, g.rdb, g.keys(sessionID).script(), orderNo).Int()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// StockMark reads a session's stock together with Redis's clock and the
// time of its latest keyed win, in one atomic step.
func (g *Gate) StockMark(ctx context.Context, sessionID int64) (seckill.StockMark, error) {
	k := g.keys(sessionID)
	v, err := idempotent(ctx, func(ctx context.Context) ([]int64, error) {
		return stockMarkScript.Run(ctx, g.rdb, []string{k.stock, k.idem}).Int64Slice()
	})
	if err != nil {
		return seckill.StockMark{}, unavailable(err)
	}
	if len(v) != 3 {
		return seckill.StockMark{}, fmt.Errorf("stock mark script returned %v", v)
	}
	m := seckill.StockMark{Stock: int(v[1]), Clock: time.UnixMilli(v[0])}
	if v[2] > 0 {
		m.LastKeyedWin = time.UnixMilli(v[2])
	}
	return m, nil
}

// Stock returns the live Redis stock of a session, and whether it was preheated.
func (g *Gate) Stock(ctx context.Context, sessionID int64) (int, bool, error) {
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) { return g.rdb.Get(ctx, g.keys(sessionID).stock).Int() })
	if errors.Is(err, goredis.Nil) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, unavailable(err)
	}
	return n, true, nil
}

// sessionsKey is the set of preheated sessions: where the relay looks for
// pending starts.
func (g *Gate) sessionsKey() string { return g.prefix + ":sessions" }

// Sessions lists the sessions that were preheated and not retired since.
func (g *Gate) Sessions(ctx context.Context) ([]int64, error) {
	vals, err := idempotent(ctx, func(ctx context.Context) ([]string, error) { return g.rdb.SMembers(ctx, g.sessionsKey()).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	ids := make([]int64, 0, len(vals))
	for _, v := range vals {
		if id, err := strconv.ParseInt(v, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Retire lets a session that is over go (retire.lua): its stock at once,
// so that no admission can reach it any more (not even from an API whose
// cached session still shows the sale open), every other key after retain
// (order views, idempotency records and reservations stay readable that
// long); then it leaves the set of preheated sessions, so the relays and
// the scheduled reconcile stop visiting it. False, and nothing changed,
// while a reservation still waits for its workflow start. Idempotent.
func (g *Gate) Retire(ctx context.Context, sessionID int64, retain time.Duration) (bool, error) {
	k := g.keys(sessionID)
	retired, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return retireScript.Run(ctx, g.rdb, []string{k.stock, k.buyers, k.resv, k.pending, k.idem, k.orders, k.stockOps},
			retain.Milliseconds()).Int()
	})
	if err != nil {
		return false, unavailable(err)
	}
	if retired == 0 {
		return false, nil
	}
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SRem(ctx, g.sessionsKey(), sessionID).Err() }); err != nil {
		return false, unavailable(err)
	}
	return true, nil
}

// Preheat loads a session's stock into Redis once (live stock is never
// overwritten) and returns the live stock: PreheatHolding with no stock
// change known to MySQL's figure. For a session no operator added stock
// to (tests, the bench, the demo).
func (g *Gate) Preheat(ctx context.Context, sessionID int64, stock int) (int, error) {
	return g.PreheatHolding(ctx, sessionID, stock, nil)
}

// PreheatHolding loads a session's stock into Redis once and returns the
// live stock. stock and applied (the request ids of the operators' stock
// changes it holds) come from one MySQL snapshot: an add-stock racing the
// preheat is then counted once, whichever of its halves lands first (see
// preheat.lua).
func (g *Gate) PreheatHolding(ctx context.Context, sessionID int64, stock int, applied []string) (int, error) {
	k := g.keys(sessionID)
	if err := retry(ctx, func(ctx context.Context) error { return g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err() }); err != nil {
		return 0, unavailable(err)
	}
	args := make([]any, 0, len(applied)+1)
	args = append(args, stock)
	for _, id := range applied {
		args = append(args, id)
	}
	n, err := idempotent(ctx, func(ctx context.Context) (int, error) {
		return preheatScript.Run(ctx, g.rdb, []string{k.stock, k.stockOps}, args...).Int()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// AddStock adds units to a session's live stock once per request id (an
// operator's POST /admin/v1/sessions/{id}/stock, after MySQL has them) and
// returns the stock after; -1 when the session is not preheated (its
// preheat will load MySQL's stock, units included).
func (g *Gate) AddStock(ctx context.Context, sessionID int64, units int, requestID string) (int, error) {
	k := g.keys(sessionID)
	res, err := idempotent(ctx, func(ctx context.Context) ([]int64, error) {
		return addStockScript.Run(ctx, g.rdb, []string{k.stock, k.stockOps, k.idem}, units, requestID).Int64Slice()
	})
	if err != nil {
		return 0, unavailable(err)
	}
	return int(res[1]), nil
}

// Rebuild replaces a session's Redis state with stock and the given live
// holdings (orders that hold stock in MySQL), in one MULTI/EXEC. It is the
// forced preheat, used after Redis lost its data: reservations not yet
// turned into orders are dropped with it.
func (g *Gate) Rebuild(ctx context.Context, sessionID int64, stock int, holdings []seckill.Reservation) error {
	k := g.keys(sessionID)
	if err := g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err(); err != nil {
		return unavailable(err)
	}
	if _, err := g.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error { rebuildIn(ctx, p, k, stock, holdings); return nil }); err != nil {
		return unavailable(err)
	}
	return nil
}

// RebuildUnchanged is Rebuild with what decide returns, under WATCH of the
// session's stock and reservations: if anything wrote them while decide
// ran (an admission, a release), nothing is rebuilt and the answer is
// ECONFLICT (see seckill.Rebuilder).
func (g *Gate) RebuildUnchanged(ctx context.Context, sessionID int64,
	decide func(context.Context) (int, []seckill.Reservation, bool, error)) (bool, error) {
	k := g.keys(sessionID)
	if err := g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err(); err != nil {
		return false, unavailable(err)
	}
	var rebuilt bool
	var decideErr error
	err := g.rdb.Watch(ctx, func(tx *goredis.Tx) error {
		stock, holdings, ok, err := decide(ctx)
		if err != nil {
			decideErr = err
			return err
		}
		if !ok {
			return nil
		}
		if _, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error { rebuildIn(ctx, p, k, stock, holdings); return nil }); err != nil {
			return err
		}
		rebuilt = true
		return nil
	}, k.stock, k.buyers, k.resv, k.pending)
	switch {
	case errors.Is(err, goredis.TxFailedErr):
		return false, seckill.Errorf(seckill.ECONFLICT, "session %d's Redis state changed while the rebuild was decided; nothing was rebuilt", sessionID)
	case decideErr != nil:
		return false, decideErr
	case err != nil:
		return false, unavailable(err)
	}
	return rebuilt, nil
}

// rebuildIn queues a rebuild of a session's state (see Rebuild) on p.
func rebuildIn(ctx context.Context, p goredis.Pipeliner, k sessionKeys, stock int, holdings []seckill.Reservation) {
	p.Del(ctx, k.stock, k.buyers, k.resv, k.pending)
	p.Set(ctx, k.stock, stock, 0)
	// Units may be back on sale: keys refused before stay refused
	// (admit.lua). This process's clock, a skew ahead of Redis's at
	// worst: a later stamp only refuses more.
	p.HSet(ctx, k.idem, "m:reopened", time.Now().Add(seckill.KeyClockSkew).UnixMilli())
	units := map[int64]int{}
	masks := map[int64]int64{}
	for _, h := range holdings {
		units[h.UserID] += h.Quantity
		masks[h.UserID] |= slotsMask(h.Slots)
		p.HSet(ctx, k.resv, h.OrderNo, NewReservationRecord(&h).Encode())
	}
	for u, n := range units {
		p.HSet(ctx, k.buyers, strconv.FormatInt(u, 10), n, fmt.Sprintf("%d:slots", u), masks[u])
	}
}

// orderView is how an order view is cached; unlike the API shape it keeps
// the trace id.
type orderView struct {
	seckill.Order
	TraceID string `json:"trace_id"`
}

// PutOrder caches the view of an order after its row changed, so that polls
// need no database. A view older than the cached one (two writers racing,
// e.g. an abandoned activity attempt) is ignored.
func (g *Gate) PutOrder(ctx context.Context, o *seckill.Order) error {
	return g.putOrder(ctx, o, "0")
}

// PutNewOrder is PutOrder for the row as its creation returned it, not
// read back: it also loses a tie with a cached view of the same updated_at,
// which can only be a change made in the same millisecond (a close after
// a cancel) and read from the row.
func (g *Gate) PutNewOrder(ctx context.Context, o *seckill.Order) error {
	return g.putOrder(ctx, o, "1")
}

func (g *Gate) putOrder(ctx context.Context, o *seckill.Order, losesTie string) error {
	b, err := json.Marshal(orderView{Order: *o, TraceID: o.TraceID})
	if err != nil {
		return err
	}
	// Idempotent: the script keeps the newest version.
	err = retry(ctx, func(ctx context.Context) error {
		return putOrderScript.Run(ctx, g.rdb, []string{g.keys(o.SessionID).orders}, o.OrderNo, o.UpdatedAt.UnixMicro(), b, losesTie).Err()
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// Order returns the cached view of an order, or, for an order whose row does
// not exist yet, a QUEUED view made from its reservation (without sku and
// amount, which the caller knows from the session). NOT_FOUND when Redis
// knows neither: the caller may still find it in MySQL.
func (g *Gate) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	sessionID, ok := seckill.OrderNoSession(orderNo)
	if !ok {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	k := g.keys(sessionID)
	vals, err := idempotent(ctx, func(ctx context.Context) ([]any, error) { return g.rdb.HMGet(ctx, k.orders, orderNo).Result() })
	if err != nil {
		return nil, unavailable(err)
	}
	if s, ok := vals[0].(string); ok {
		var v orderView
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("order view %s: %w", orderNo, err)
		}
		v.Order.TraceID = v.TraceID
		return &v.Order, nil
	}
	raw, err := idempotent(ctx, func(ctx context.Context) (string, error) { return g.rdb.HGet(ctx, k.resv, orderNo).Result() })
	if errors.Is(err, goredis.Nil) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	} else if err != nil {
		return nil, unavailable(err)
	}
	r, err := parseReservation(sessionID, orderNo, raw)
	if err != nil {
		return nil, err
	}
	return &seckill.Order{
		OrderNo: orderNo, SessionID: sessionID, UserID: r.UserID, Quantity: r.Quantity,
		Status: seckill.StatusQueued, CreatedAt: r.ReservedAt, TraceID: r.TraceID,
	}, nil
}

// Reservation returns the live reservation of an order by its number:
// what the workflow is started with (the webhook starts a QUEUED order's
// workflow with its payment). NOT_FOUND when there is none: never
// admitted, or released since.
func (g *Gate) Reservation(ctx context.Context, orderNo string) (*seckill.Reservation, error) {
	sessionID, ok := seckill.OrderNoSession(orderNo)
	if !ok {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	raw, err := idempotent(ctx, func(ctx context.Context) (string, error) {
		return g.rdb.HGet(ctx, g.keys(sessionID).resv, orderNo).Result()
	})
	if errors.Is(err, goredis.Nil) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "no reservation for order %s", orderNo)
	} else if err != nil {
		return nil, unavailable(err)
	}
	return parseReservation(sessionID, orderNo, raw)
}

// SessionSnapshot reads the Redis side of a session for reconcile with one
// script: stock, reservations, pending starts and per-user marks at one
// instant, so an admission or release running meanwhile is either wholly in
// it or wholly out.
func (g *Gate) SessionSnapshot(ctx context.Context, sessionID int64) (*seckill.RedisSnapshot, error) {
	res, err := idempotent(ctx, func(ctx context.Context) ([]any, error) {
		return snapshotScript.Run(ctx, g.rdb, g.keys(sessionID).script()).Slice()
	})
	if err != nil {
		return nil, unavailable(err)
	}
	if len(res) != 5 {
		return nil, fmt.Errorf("snapshot script returned %d values", len(res))
	}
	snap := &seckill.RedisSnapshot{Reservations: map[string]int{}, ReservedAt: map[string]time.Time{}}
	if s, ok := res[0].(string); ok {
		if snap.Stock, err = strconv.Atoi(s); err != nil {
			return nil, fmt.Errorf("session %d stock %q: %w", sessionID, s, err)
		}
		snap.Preheated = true
	}
	reserved, reservedSlots := map[int64]int{}, map[int64]int64{}
	resv, _ := res[1].([]any)
	for i := 0; i+1 < len(resv); i += 2 {
		no, _ := resv[i].(string)
		raw, _ := resv[i+1].(string)
		r, err := parseReservation(sessionID, no, raw)
		if err != nil {
			return nil, err
		}
		snap.Reservations[no] = r.Quantity
		snap.ReservedAt[no] = r.ReservedAt
		reserved[r.UserID] += r.Quantity
		reservedSlots[r.UserID] |= slotsMask(r.Slots)
	}
	n, _ := res[2].(int64)
	snap.Pending = int(n)
	if s, ok := res[3].(string); ok {
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("session %d oldest pending start %q: %w", sessionID, s, err)
		}
		snap.OldestPending = time.UnixMilli(int64(ms)).UTC()
	}
	// The per-user marks (units and slots) must be exactly what the user's
	// live reservations hold: the admission and release scripts keep them
	// together, so any difference is corruption.
	marks, _ := res[4].([]any)
	seen := map[int64]bool{}
	for i := 0; i+1 < len(marks); i += 2 {
		field, _ := marks[i].(string)
		v, _ := marks[i+1].(string)
		user, isSlots := strings.CutSuffix(field, ":slots")
		id, err1 := strconv.ParseInt(user, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			snap.MarkMismatches++
			continue
		}
		seen[id] = true
		if (isSlots && n != reservedSlots[id]) || (!isSlots && int(n) != reserved[id]) {
			snap.MarkMismatches++
		}
	}
	for id := range reserved {
		if !seen[id] {
			snap.MarkMismatches++
		}
	}
	return snap, nil
}
