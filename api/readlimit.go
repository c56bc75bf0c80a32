package api

import (
	"net/netip"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/seckill/seckill/internal/expiring"
	"golang.org/x/time/rate"
)

// maxReadBuckets bounds the per-IP buckets of the public reads: a flood
// from many addresses costs at most this many buckets (about 100 bytes
// each), never a map that grows with every address ever seen.
const maxReadBuckets = 1 << 16

// readLimiter limits the public reads (the session list, one session, order
// polling) per client IP, in this process's memory: a read must not cost a
// Redis round trip more than the answer itself, and the limit must hold
// while Redis is away. Behind N API processes a client gets up to N times
// the rate, which is fine for a limit whose job is to stop one address from
// exhausting the front door, not to meter it exactly.
type readLimiter struct {
	rps     int
	buckets *expiring.Map[netip.Addr, *rate.Limiter]
}

func newReadLimiter(rps int) *readLimiter {
	if rps <= 0 {
		return nil
	}
	return &readLimiter{rps: rps, buckets: expiring.New[netip.Addr, *rate.Limiter](maxReadBuckets)}
}

// allow takes a token from the address's bucket. A bucket holds one second
// of tokens, so one idle for a second is full again: forgetting it then (its
// entry's expiry) or earlier under a flood (eviction) loses nothing but the
// debt of a client that stopped asking.
func (l *readLimiter) allow(a netip.Addr, now time.Time) bool {
	b := l.buckets.GetOrPut(limitKey(a), now, time.Second, func() *rate.Limiter {
		return rate.NewLimiter(rate.Limit(l.rps), l.rps)
	})
	return b.AllowN(now, 1)
}

// HeaderTime carries the server's clock, in Unix milliseconds, on the
// answers of the reads a shop page polls: the clock its Idempotency-Keys
// are stamped with, known to within half a round trip (Date has whole
// seconds only).
const HeaderTime = "X-Seckill-Time"

// readLimit is the middleware of the reads: 429 RATE_LIMITED with
// Retry-After past Limits.Read requests per second from one client IP;
// the answer carries HeaderTime.
func (s *Server) readLimit(c *fiber.Ctx) error {
	if s.reads != nil && !s.reads.allow(s.clientIP(c), time.Now()) {
		return rateLimited(c, time.Second)
	}
	c.Set(HeaderTime, strconv.FormatInt(s.cfg.Now().UnixMilli(), 10))
	return c.Next()
}
