// Package ratelimit holds the rate limits kept in this process's memory,
// per client address: they must hold while Redis is away and cost no
// round trip. Behind N API processes an address gets up to N times a
// limit, which is fine for limits whose job is to stop one address from
// exhausting the front door (the public reads) or from guessing admin
// credentials at MySQL's expense, not to meter it exactly. The fleet-wide
// limits are admission's (in Redis); the global bucket is fleet's.
package ratelimit

import (
	"net/netip"
	"time"

	"golang.org/x/time/rate"

	"github.com/seckill/seckill/internal/expiring"
)

// maxBuckets bounds the addresses a limit remembers: a flood from many
// addresses costs at most this many buckets (about 100 bytes each), never
// a map that grows with every address ever seen.
const maxBuckets = 1 << 16

// PerAddr is a token bucket per client address (Key). A bucket holds n
// tokens and refills in full within its window, so one idle for a window
// is full again: forgetting it then (its entry's expiry) or earlier under a
// flood (eviction) loses nothing but the debt of a client that stopped
// asking.
type PerAddr struct {
	limit   rate.Limit
	burst   int
	window  time.Duration
	buckets *expiring.Map[netip.Addr, *rate.Limiter]
}

// PerSecond allows n requests a second per address (the public reads);
// nil, no limit, when n is not positive.
func PerSecond(n int) *PerAddr { return perWindow(n, time.Second) }

// PerMinute allows n a minute per address (failed admin credentials); nil
// when n is not positive.
func PerMinute(n int) *PerAddr { return perWindow(n, time.Minute) }

func perWindow(n int, window time.Duration) *PerAddr {
	if n <= 0 {
		return nil
	}
	return &PerAddr{limit: rate.Limit(float64(n) / window.Seconds()), burst: n, window: window,
		buckets: expiring.New[netip.Addr, *rate.Limiter](maxBuckets)}
}

func (l *PerAddr) bucket(a netip.Addr, now time.Time) *rate.Limiter {
	return l.buckets.GetOrPut(Key(a), now, l.window, func() *rate.Limiter {
		return rate.NewLimiter(l.limit, l.burst)
	})
}

// Allow takes a token from the address's bucket.
func (l *PerAddr) Allow(a netip.Addr, now time.Time) bool {
	return l.bucket(a, now).AllowN(now, 1)
}

// Reserve takes a token from a's bucket before the work it pays for (an
// admin credential's check), so that concurrent requests cannot all pass;
// ok is false, with the wait until the next token, when none is left. The
// caller gives the token back (cancel) when the work turned out not to
// count (the credential held).
func (l *PerAddr) Reserve(a netip.Addr, now time.Time) (cancel func(), wait time.Duration, ok bool) {
	r := l.bucket(a, now).ReserveN(now, 1)
	if wait = r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return nil, wait, false
	}
	return func() { r.CancelAt(now) }, 0, true
}

// Len is how many addresses the limit holds a bucket for.
func (l *PerAddr) Len() int { return l.buckets.Len() }

// Key is the address a per-IP limit counts against. An IPv6 client
// usually holds a whole /64 and could rotate through it freely, so IPv6
// addresses count per /64; IPv4 addresses count one by one.
func Key(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
