package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
)

// HeaderTime carries the server's clock, in Unix milliseconds, on the
// answers of the reads a shop page polls: the clock its Idempotency-Keys
// are stamped with, known to within half a round trip (Date has whole
// seconds only).
const HeaderTime = "X-Seckill-Time"

// readLimit is the middleware of the reads (the session list, one session,
// order polling): 429 RATE_LIMITED with Retry-After past Limits.Read
// requests per second from one client IP, counted in this process's memory
// (ratelimit.PerSecond); the answer carries HeaderTime.
func (s *Server) readLimit(c *fiber.Ctx) error {
	if s.reads != nil && !s.reads.Allow(s.clientIP(c), time.Now()) {
		return rateLimited(c, time.Second)
	}
	c.Set(HeaderTime, strconv.FormatInt(s.cfg.Now().UnixMilli(), 10))
	return c.Next()
}
