// Package redis is the Redis adapter: the fast gate in front of MySQL. It
// holds each session's stock, per-user marks, reservations and
// pending-start entries under one hash tag, changes them only through the
// embedded Lua scripts (so every decision is one atomic step, also on Redis
// Cluster), and caches order views for the hot poll path.
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

	admitScript    = goredis.NewScript(admitSrc)
	releaseScript  = goredis.NewScript(releaseSrc)
	putOrderScript = goredis.NewScript(putOrderSrc)
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
	for _, s := range []*goredis.Script{admitScript, releaseScript, putOrderScript} {
		if err := s.Load(ctx, g.rdb).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// Ping checks that Redis answers.
func (g *Gate) Ping(ctx context.Context) error { return g.rdb.Ping(ctx).Err() }

// sessionKeys are the keys of one session, in the order the scripts take them.
type sessionKeys struct{ base, stock, buyers, resv, pending, orders string }

func (g *Gate) keys(sessionID int64) sessionKeys {
	// {s<id>} is the hash tag: every key of a session lands in one slot.
	base := fmt.Sprintf("%s:{s%d}:", g.prefix, sessionID)
	return sessionKeys{base, base + "stock", base + "buyers", base + "resv", base + "pending", base + "orders"}
}

func (k sessionKeys) script() []string { return []string{k.stock, k.buyers, k.resv, k.pending} }

// unavailable wraps an infrastructure failure of Redis in the error vocabulary.
func unavailable(err error) error {
	return fmt.Errorf("%w (redis: %v)", seckill.Errorf(seckill.EUNAVAILABLE, "stock service unavailable, retry shortly"), err)
}

// Admit runs the admission script for one purchase attempt. On success the
// units are deducted and the reservation and its pending-start entry are
// recorded, atomically; the returned reservation carries the slots handed out.
// Losers get SOLD_OUT or LIMIT_EXCEEDED; an unpreheated session UNAVAILABLE.
func (g *Gate) Admit(ctx context.Context, s *seckill.Session, userID int64, qty int, orderNo, traceID string, now time.Time) (*seckill.Reservation, int, error) {
	call := &admitCall{s: s, userID: userID, qty: qty, orderNo: orderNo, traceID: traceID, now: now, done: make(chan admitResult, 1)}
	var r admitResult
	if g.Coalesce {
		r = g.coalescerFor(s.ID).submit(ctx, call)
	} else {
		res, err := admitScript.Run(ctx, g.rdb, g.keys(s.ID).script(),
			1, userID, qty, s.PerUserLimit, orderNo, now.UnixMilli(), traceID).Int64Slice()
		switch {
		case err != nil:
			r.err = unavailable(err)
		case len(res) != 3:
			r.err = fmt.Errorf("admit script returned %v", res)
		default:
			r.code, r.left, r.mask = res[0], res[1], res[2]
		}
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	left := int(r.left)
	switch r.code {
	case 0:
	case -1:
		return nil, left, seckill.Errorf(seckill.ESOLDOUT, "sold out")
	case -2:
		return nil, left, seckill.Errorf(seckill.ELIMIT, "at most %d per shopper in this sale", s.PerUserLimit)
	case -3:
		return nil, 0, seckill.Errorf(seckill.EUNAVAILABLE, "session %d is not preheated yet", s.ID)
	case -4:
		return nil, left, seckill.Errorf(seckill.ECONFLICT, "order number %s already reserved", orderNo)
	default:
		return nil, 0, fmt.Errorf("admit script returned code %d", r.code)
	}
	return &seckill.Reservation{
		OrderNo: orderNo, SessionID: s.ID, UserID: userID, Quantity: qty,
		Slots: maskSlots(r.mask), ReservedAt: time.UnixMilli(now.UnixMilli()).UTC(), TraceID: traceID,
	}, left, nil
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
	if err := g.rdb.ZRem(ctx, g.keys(sessionID).pending, orderNo).Err(); err != nil {
		return unavailable(err)
	}
	return nil
}

// Pending returns up to limit reservations of a session whose
// pending-start entry is older than before, oldest first: reservations whose
// workflow start may have been lost. An entry whose reservation is gone
// (already released) is dropped.
func (g *Gate) Pending(ctx context.Context, sessionID int64, before time.Time, limit int) ([]seckill.Reservation, error) {
	k := g.keys(sessionID)
	nos, err := g.rdb.ZRangeByScore(ctx, k.pending, &goredis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(before.UnixMilli(), 10), Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	if len(nos) == 0 {
		return nil, nil
	}
	raws, err := g.rdb.HMGet(ctx, k.resv, nos...).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]seckill.Reservation, 0, len(nos))
	for i, no := range nos {
		raw, ok := raws[i].(string)
		if !ok {
			if err := g.rdb.ZRem(ctx, k.pending, no).Err(); err != nil {
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
	n, err := releaseScript.Run(ctx, g.rdb, g.keys(sessionID).script(), orderNo).Int()
	if err != nil {
		return 0, unavailable(err)
	}
	return n, nil
}

// Stock returns the live Redis stock of a session, and whether it was preheated.
func (g *Gate) Stock(ctx context.Context, sessionID int64) (int, bool, error) {
	n, err := g.rdb.Get(ctx, g.keys(sessionID).stock).Int()
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

// Sessions lists the sessions that were preheated.
func (g *Gate) Sessions(ctx context.Context) ([]int64, error) {
	vals, err := g.rdb.SMembers(ctx, g.sessionsKey()).Result()
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

// Preheat loads stock into Redis if the session has none there yet, and
// returns the live stock. It never overwrites live stock: a second call
// changes nothing and returns what is there.
func (g *Gate) Preheat(ctx context.Context, sessionID int64, stock int) (int, error) {
	k := g.keys(sessionID)
	if err := g.rdb.SAdd(ctx, g.sessionsKey(), sessionID).Err(); err != nil {
		return 0, unavailable(err)
	}
	if _, err := g.rdb.SetNX(ctx, k.stock, stock, 0).Result(); err != nil {
		return 0, unavailable(err)
	}
	n, _, err := g.Stock(ctx, sessionID)
	return n, err
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
	_, err := g.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, k.stock, k.buyers, k.resv, k.pending)
		p.Set(ctx, k.stock, stock, 0)
		units := map[int64]int{}
		masks := map[int64]int64{}
		for _, h := range holdings {
			units[h.UserID] += h.Quantity
			masks[h.UserID] |= slotsMask(h.Slots)
			p.HSet(ctx, k.resv, h.OrderNo, fmt.Sprintf("%d|%d|%d|%d|%s",
				h.UserID, h.Quantity, slotsMask(h.Slots), h.ReservedAt.UnixMilli(), h.TraceID))
		}
		for u, n := range units {
			p.HSet(ctx, k.buyers, strconv.FormatInt(u, 10), n, fmt.Sprintf("%d:slots", u), masks[u])
		}
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
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
	b, err := json.Marshal(orderView{Order: *o, TraceID: o.TraceID})
	if err != nil {
		return err
	}
	err = putOrderScript.Run(ctx, g.rdb, []string{g.keys(o.SessionID).orders},
		o.OrderNo, o.UpdatedAt.UnixMicro(), b).Err()
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
	vals, err := g.rdb.HMGet(ctx, k.orders, orderNo).Result()
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
	raw, err := g.rdb.HGet(ctx, k.resv, orderNo).Result()
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

// parseReservation decodes "user|qty|mask|unix ms|trace" as the scripts write it.
func parseReservation(sessionID int64, orderNo, raw string) (*seckill.Reservation, error) {
	f := strings.SplitN(raw, "|", 5)
	if len(f) != 5 {
		return nil, fmt.Errorf("reservation %s: malformed %q", orderNo, raw)
	}
	user, err1 := strconv.ParseInt(f[0], 10, 64)
	qty, err2 := strconv.Atoi(f[1])
	mask, err3 := strconv.ParseInt(f[2], 10, 64)
	ms, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("reservation %s: %w", orderNo, err)
	}
	return &seckill.Reservation{
		OrderNo: orderNo, SessionID: sessionID, UserID: user, Quantity: qty,
		Slots: maskSlots(mask), ReservedAt: time.UnixMilli(ms).UTC(), TraceID: f[4],
	}, nil
}

// SessionSnapshot reads the Redis side of a session for reconcile.
func (g *Gate) SessionSnapshot(ctx context.Context, sessionID int64) (*seckill.RedisSnapshot, error) {
	k := g.keys(sessionID)
	stock, preheated, err := g.Stock(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	snap := &seckill.RedisSnapshot{Preheated: preheated, Stock: stock, Reservations: map[string]int{}}
	reserved, reservedSlots := map[int64]int{}, map[int64]int64{}
	iter := g.rdb.HScan(ctx, k.resv, 0, "", 1000).Iterator()
	for iter.Next(ctx) {
		no := iter.Val()
		if !iter.Next(ctx) {
			break
		}
		r, err := parseReservation(sessionID, no, iter.Val())
		if err != nil {
			return nil, err
		}
		snap.Reservations[no] = r.Quantity
		reserved[r.UserID] += r.Quantity
		reservedSlots[r.UserID] |= slotsMask(r.Slots)
	}
	if err := iter.Err(); err != nil {
		return nil, unavailable(err)
	}
	if snap.Pending, snap.OldestPending, err = g.PendingStats(ctx, sessionID); err != nil {
		return nil, err
	}
	// The per-user marks (units and slots) must be exactly what the user's
	// live reservations hold: the admission and release scripts keep them
	// together, so any difference is corruption.
	marks, err := g.rdb.HGetAll(ctx, k.buyers).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	seen := map[int64]bool{}
	for field, v := range marks {
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
