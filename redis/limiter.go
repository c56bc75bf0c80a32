package redis

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
)

// Limiter is the distributed rate limiter (GCRA, from redis_rate) shared by
// every API process: per-user and per-IP limits hold across the fleet.
type Limiter struct {
	l      *redis_rate.Limiter
	prefix string
}

// NewLimiter returns a limiter whose keys start with prefix.
func NewLimiter(rdb goredis.UniversalClient, prefix string) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(rdb), prefix: prefix + ":limit:"}
}

// Allow takes one request from key's budget of perSecond requests a second
// (bursts up to one second's worth). When refused, retryAfter says when the
// next request would pass. A Redis failure is an error, never a pass.
func (l *Limiter) Allow(ctx context.Context, key string, perSecond int) (bool, time.Duration, error) {
	res, err := l.l.Allow(ctx, l.prefix+key, redis_rate.PerSecond(perSecond))
	if err != nil {
		return false, 0, unavailable(err)
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

// ConsumeTicket marks a purchase ticket's nonce used; it returns false when
// it was used before. The mark lives as long as the ticket could.
func (g *Gate) ConsumeTicket(ctx context.Context, sessionID int64, nonce string, ttl time.Duration) (bool, error) {
	ok, err := g.rdb.SetNX(ctx, g.keys(sessionID).base+"ticket:"+nonce, 1, ttl).Result()
	if err != nil {
		return false, unavailable(err)
	}
	return ok, nil
}
