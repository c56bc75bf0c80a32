package admission

import (
	"context"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
)

// Limiter is a rate limiter shared by every API process (Redis).
type Limiter interface {
	Allow(ctx context.Context, key string, perSecond int) (allowed bool, retryAfter time.Duration, err error)
}

// Limits are the fleet-wide rate limits of a shopper's calls, in requests
// per second (0: off): per user, per client IP and, for requests that
// carry a device cookie, per device (the risk check's). Limiter keeps
// them; it is required when any is on.
type Limits struct {
	Limiter          Limiter
	User, IP, Device int
}

// Allow applies the per-user and per-IP limits (ip as its limit counts
// it). If Redis cannot answer, the call is refused with UNAVAILABLE: a
// limit is never skipped.
func (l *Limits) Allow(ctx context.Context, user int64, ip netip.Addr) Answer {
	for _, k := range []struct {
		key string
		rps int
	}{
		{"user:" + strconv.FormatInt(user, 10), l.User},
		{"ip:" + ip.String(), l.IP},
	} {
		if ans := l.allow(ctx, k.key, k.rps); ans.Err != nil {
			return ans
		}
	}
	return Answer{}
}

// allow takes one token of key's bucket, of rps per second.
func (l *Limits) allow(ctx context.Context, key string, rps int) Answer {
	if rps <= 0 {
		return Answer{}
	}
	ok, retry, err := l.Limiter.Allow(ctx, key, rps)
	if err != nil {
		return Answer{Err: err}
	}
	if !ok {
		return Answer{Err: ErrRateLimited, Layer: LayerRateLimit, RetryAfter: retry}
	}
	return Answer{}
}

// ErrRateLimited refuses a call over a rate limit.
var ErrRateLimited = seckill.Errorf(seckill.ERATELIMITED, "too many requests; retry after the Retry-After delay")

// Blocklist is the blocklist's truth (MySQL); every process keeps a copy
// in memory, refreshed every second, so the 403 costs no round trip.
type Blocklist interface {
	BlockedUsers(ctx context.Context) ([]int64, error)
}

// ErrBlocked refuses a blocked shopper.
var ErrBlocked = seckill.Errorf(seckill.EFORBIDDEN, "this account may not buy")

// Blocked refuses a blocked shopper (ErrBlocked), from memory.
func (s *Service) Blocked(user int64) error {
	if s.blocked.has(user) {
		return ErrBlocked
	}
	return nil
}

// RefreshBlocklist reloads the memory's copy of the blocklist.
func (s *Service) RefreshBlocklist(ctx context.Context) error {
	ids, err := s.Blocklist.BlockedUsers(ctx)
	if err != nil {
		return err
	}
	s.blocked.replace(ids)
	return nil
}

// blocklist is the set of blocked users, held in memory.
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
