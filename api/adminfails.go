package api

import (
	"net/netip"
	"time"

	"github.com/seckill/seckill/internal/expiring"
	"golang.org/x/time/rate"
)

// failLimiter limits the failed admin credentials of each client address
// (Limits.AdminFails a minute), in this process's memory: it must hold
// while Redis is away and cost no round trip, since its job is to keep a
// guesser from costing MySQL a named-token lookup per guess. Behind N API
// processes an address gets up to N times the budget.
type failLimiter struct {
	perMinute int
	buckets   *expiring.Map[netip.Addr, *rate.Limiter]
}

// maxFailBuckets bounds the addresses remembered, as maxReadBuckets does.
const maxFailBuckets = 1 << 16

func newFailLimiter(perMinute int) *failLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &failLimiter{perMinute: perMinute, buckets: expiring.New[netip.Addr, *rate.Limiter](maxFailBuckets)}
}

// reserve takes one failure from a's budget before its credential is
// checked, so that concurrent guesses cannot all pass; ok is false, with
// the wait until the next one, when none is left. The caller gives the
// failure back (cancel) when the credential held. A bucket refills in a
// minute, so forgetting it after a minute idle loses nothing.
func (l *failLimiter) reserve(a netip.Addr, now time.Time) (cancel func(), wait time.Duration, ok bool) {
	b := l.buckets.GetOrPut(limitKey(a), now, time.Minute, func() *rate.Limiter {
		return rate.NewLimiter(rate.Limit(float64(l.perMinute)/60), l.perMinute)
	})
	r := b.ReserveN(now, 1)
	if wait = r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return nil, wait, false
	}
	return func() { r.CancelAt(now) }, 0, true
}
