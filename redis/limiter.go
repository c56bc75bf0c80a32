package redis

import (
	"context"
	"errors"
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
// Never retried: the limiter's script takes a token each time it runs, so
// a run whose reply was lost has already counted (the client answers 503).
func (l *Limiter) Allow(ctx context.Context, key string, perSecond int) (bool, time.Duration, error) {
	res, err := l.l.Allow(ctx, l.prefix+key, redis_rate.PerSecond(perSecond))
	if err != nil {
		return false, 0, unavailable(err)
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

// ConsumeTicket marks a purchase ticket's nonce used by owner (one
// purchase attempt: the user's Idempotency-Key, or the request's trace id)
// and returns false when another owner used it before. The same owner may
// present it again: a SET whose reply was lost and is sent again, or the
// retry of the same purchase, must not find its own ticket "used". The mark
// lives as long as the ticket could.
func (g *Gate) ConsumeTicket(ctx context.Context, sessionID int64, nonce, owner string, ttl time.Duration) (bool, error) {
	key := g.keys(sessionID).base + "ticket:" + nonce
	prev, err := idempotent(ctx, func(ctx context.Context) (string, error) {
		return g.rdb.SetArgs(ctx, key, owner, goredis.SetArgs{Mode: "NX", Get: true, TTL: ttl}).Result()
	})
	if errors.Is(err, goredis.Nil) {
		return true, nil // it was fresh: now ours
	} else if err != nil {
		return false, unavailable(err)
	}
	return prev == owner, nil
}
