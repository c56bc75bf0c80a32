package api

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"golang.org/x/time/rate"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
)

// Blocklist is the blocklist in MySQL; every API keeps a copy in memory,
// refreshed every second.
type Blocklist interface {
	Block(ctx context.Context, userID int64, reason string) error
	Unblock(ctx context.Context, userID int64) error
	BlockedUsers(ctx context.Context) ([]int64, error)
}

// Limiter is a rate limiter shared by every API process (Redis).
type Limiter interface {
	Allow(ctx context.Context, key string, perSecond int) (allowed bool, retryAfter time.Duration, err error)
}

// Limits are requests per second; 0 turns a limit off.
type Limits struct {
	// Global is the token bucket in front of everything, in each
	// process's memory so that it holds even when Redis is gone: the
	// fleet's budget split among the live APIs when Config.Fleet is set,
	// this process's alone otherwise.
	Global int
	// User and IP are fleet-wide, in Redis; so is Device, per device
	// cookie (RiskConfig), for requests that carry one.
	User   int
	IP     int
	Device int
	// Read is per client IP on the public reads (the session list, one
	// session, order polling), in each process's memory.
	Read int
	// AdminFails is how many failed admin credentials a client IP may
	// send a minute, in each process's memory; past it the admin API
	// answers it 429 before looking at its credential (see failLimiter).
	AdminFails int
}

// globalLimit is the global token bucket (this process's share of it), the
// first thing an admission meets.
func (s *Server) globalLimit(c *fiber.Ctx) error {
	if s.global != nil && !s.global.Allow() {
		c.Set(HeaderLayer, LayerGlobalLimit)
		return rateLimited(c, time.Second)
	}
	return c.Next()
}

func rateLimited(c *fiber.Ctx, retryAfter time.Duration) error {
	setRetryAfter(c, retryAfter)
	return seckill.Errorf(seckill.ERATELIMITED, "too many requests; retry after the Retry-After delay")
}

// setRetryAfter says, in whole seconds (at least one), when to retry.
func setRetryAfter(c *fiber.Ctx, d time.Duration) {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Max(1, math.Ceil(d.Seconds())))))
}

// distributedLimits applies the per-user and per-IP limits. If Redis cannot
// answer, the request is refused with UNAVAILABLE: a limit is never skipped.
func (s *Server) distributedLimits(c *fiber.Ctx, user int64) error {
	ctx := c.UserContext()
	for _, l := range []struct {
		key string
		rps int
	}{
		{"user:" + strconv.FormatInt(user, 10), s.cfg.Limits.User},
		{"ip:" + limitKey(s.clientIP(c)).String(), s.cfg.Limits.IP},
	} {
		if l.rps <= 0 {
			continue
		}
		ok, retry, err := s.cfg.Limiter.Allow(ctx, l.key, l.rps)
		if err != nil {
			return err
		}
		if !ok {
			c.Set(HeaderLayer, LayerRateLimit)
			return rateLimited(c, retry)
		}
	}
	return nil
}

func newGlobalLimiter(rps int) *rate.Limiter {
	if rps <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(rps), rps)
}

// blocklist is the set of blocked users, held in memory and refreshed from
// MySQL every second, so the 403 costs no round trip.
type blocklist struct {
	set atomic.Pointer[map[int64]struct{}]
}

func (b *blocklist) has(user int64) bool {
	m := b.set.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[user]
	return ok
}

func (b *blocklist) replace(ids []int64) {
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	b.set.Store(&m)
}

func (s *Server) refreshBlocklist(ctx context.Context) error {
	ids, err := s.store.BlockedUsers(ctx)
	if err != nil {
		return err
	}
	s.blocked.replace(ids)
	return nil
}

// soldOut remembers, per process, the sessions whose Redis stock reached
// zero, so the flood of losers after a sell-out is refused from memory. A
// watcher re-reads their stock a few times a second and lifts the flag as
// soon as stock comes back (timeouts, cancels, an admin rebuild).
type soldOut struct {
	mu  sync.RWMutex
	ids map[int64]keyedMark
	n   atomic.Int32 // len(ids): the common case (nothing sold out) takes no lock
}

// keyedMark is what lets a process answer a keyed request to a sold-out
// session without asking Redis whether the key holds a reservation: the
// watcher's last read of the stock at zero, in Redis's clock, and the
// latest keyed win as of that read (seckill.StockMark). Zero until the
// watcher has read it (a flag set by an admission answer).
//
// A key stamped (seckill.KeyTime) after lastWin + skew cannot hold a
// reservation made up to soldAt: the script refuses keys stamped more than
// the skew ahead of Redis's clock. One stamped by soldAt + skew cannot
// hold one made after it either: a win after soldAt needs units back on
// sale after it, and the script then refuses keys stamped by that return
// + skew. Such a key holding nothing stays refused for the same reason,
// so a SOLD_OUT told now is never contradicted by a win later.
type keyedMark struct{ soldAt, lastWin time.Time }

// keyedAnswer is how a keyed request to a session flagged sold out is
// answered.
type keyedAnswer int

const (
	keyedScript keyedAnswer = iota // the whole path: the flag may be stale for this key
	keyedPin                       // SOLD_OUT unless its pin (a read) says it won
	keyedMemory                    // SOLD_OUT from memory
)

// answer decides for a key stamped at (zero: a key that carries no time,
// older than everything).
func (m keyedMark) answer(at time.Time) keyedAnswer {
	switch {
	case m.soldAt.IsZero() || at.After(m.soldAt.Add(seckill.KeyClockSkew)):
		return keyedScript
	case !at.IsZero() && at.After(m.lastWin.Add(seckill.KeyClockSkew)):
		return keyedMemory
	default:
		return keyedPin
	}
}

func (s *soldOut) has(id int64) bool {
	if s.n.Load() == 0 {
		return false
	}
	s.mu.RLock()
	_, ok := s.ids[id]
	s.mu.RUnlock()
	return ok
}

// keyed returns how a keyed request stamped at is answered for session
// id; keyedScript when it is not flagged.
func (s *soldOut) keyed(id int64, at time.Time) keyedAnswer {
	if s.n.Load() == 0 {
		return keyedScript
	}
	s.mu.RLock()
	m, ok := s.ids[id]
	s.mu.RUnlock()
	if !ok {
		return keyedScript
	}
	return m.answer(at)
}

func (s *soldOut) mark(id int64) {
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[int64]keyedMark{}
	}
	if _, ok := s.ids[id]; !ok {
		s.ids[id] = keyedMark{}
	}
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

// confirm records the watcher's read of a flagged session's stock at zero.
func (s *soldOut) confirm(id int64, m seckill.StockMark) {
	s.mu.Lock()
	if _, ok := s.ids[id]; ok {
		s.ids[id] = keyedMark{soldAt: m.Clock, lastWin: m.LastKeyedWin}
	}
	s.mu.Unlock()
}

func (s *soldOut) clear(id int64) {
	s.mu.Lock()
	delete(s.ids, id)
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

func (s *soldOut) list() []int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]int64, 0, len(s.ids))
	for id := range s.ids {
		out = append(out, id)
	}
	return out
}

// soldOutFast answers SOLD_OUT from memory for a session this process saw
// sell out, before any other work: after a sell-out nearly every request
// is a loser, and the answer does not depend on who asks (the state is
// public on GET /api/v1/sessions/{id}). Nothing here touches stock.
//
// A request with an Idempotency-Key may be the retry of one that won (its
// answer was lost), which a SOLD_OUT would contradict: it is answered here
// only when its key is a UUIDv7 stamped too late to hold a reservation
// (keyedMark); createOrder decides the others.
func (s *Server) soldOutFast(c *fiber.Ctx) error {
	if s.soldOut.n.Load() > 0 {
		if id, err := strconv.ParseInt(c.Params("id"), 10, 64); err == nil && s.soldOut.has(id) {
			key := c.Request().Header.Peek(HeaderIdempotencyKey)
			if len(key) == 0 {
				c.Set(HeaderLayer, LayerSoldOutMemory)
				return errSoldOut
			}
			if at, ok := seckill.KeyTime(utils.UnsafeString(key)); ok && s.soldOut.keyed(id, at) == keyedMemory {
				c.Set(HeaderLayer, LayerSoldOutMemory)
				return errSoldOut
			}
		}
	}
	return c.Next()
}

// watchSoldOut lifts sold-out flags whose session has stock again, or
// has ended or been paused: those answer ENDED or PAUSED (from the session
// cache, also without I/O), not SOLD_OUT. A flag whose stock is still
// zero gets the read's mark, for keyed requests.
func (s *Server) watchSoldOut(ctx context.Context) {
	for _, id := range s.soldOut.list() {
		if sess, err := s.sessions.Get(ctx, id); err == nil {
			if st := sess.StateAt(s.cfg.Now(), 1); st == seckill.SessionEnded || st == seckill.SessionPaused {
				s.soldOut.clear(id)
				continue
			}
		}
		m, err := s.gate.StockMark(ctx, id)
		switch {
		case err != nil:
		case m.Stock > 0:
			s.soldOut.clear(id)
		case m.Stock == 0:
			s.soldOut.confirm(id, m)
		}
	}
}

// Start runs the API's background loops until ctx ends: the blocklist
// refresh (every second) and the sold-out watcher (every 200 ms, so stock
// that comes back sells again well within a second on every process).
func (s *Server) Start(ctx context.Context) {
	if err := s.refreshBlocklist(ctx); err != nil {
		s.log.Warn("blocklist load failed; retrying", "error", err)
	}
	go tick.Every(ctx, time.Second, func() {
		if err := s.refreshBlocklist(ctx); err != nil {
			s.log.Warn("blocklist refresh failed; keeping the last one", "error", err)
		}
	})
	if s.cfg.Fleet != nil && s.global != nil {
		s.beat(ctx)
		go tick.Every(ctx, fleetBeat, func() { s.beat(ctx) })
	}
	go tick.Every(ctx, s.cfg.SoldOutRecheck, func() { s.watchSoldOut(ctx) })
	if s.cfg.DependencyPing >= 0 {
		go s.cfg.Metrics.WatchDependencies(ctx, s.cfg.DependencyPing, s.dependencies())
	}
	go tick.Every(ctx, doorSample, func() { s.door.sample(time.Now()) })
}

// block: PUT /admin/v1/blocklist/{user_id}.
func (s *Server) block(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	name, role := actor(c)
	if err := s.store.Block(c.UserContext(), id, fmt.Sprintf("by %s (%s)", name, role)); err != nil {
		return err
	}
	s.log.Info("user blocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, true)
}

// unblock: DELETE /admin/v1/blocklist/{user_id}.
func (s *Server) unblock(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	if err := s.store.Unblock(c.UserContext(), id); err != nil {
		return err
	}
	name, role := actor(c)
	s.log.Info("user unblocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, false)
}

func (s *Server) blocklistChanged(c *fiber.Ctx, id int64, blocked bool) error {
	if err := s.refreshBlocklist(c.UserContext()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user_id": id, "blocked": blocked})
}
