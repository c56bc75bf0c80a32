package ratelimit_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/ratelimit"
)

// A bucket per address (an IPv6 /64 is one address), refilled within its
// window; a reservation given back costs nothing; 0 is no limit.
func TestPerAddr(t *testing.T) {
	require.Nil(t, ratelimit.PerSecond(0))
	now := time.Unix(1_700_000_000, 0)
	l := ratelimit.PerSecond(2)
	a, b := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("198.51.100.8")
	require.True(t, l.Allow(a, now))
	require.True(t, l.Allow(a, now))
	require.False(t, l.Allow(a, now), "two a second")
	require.True(t, l.Allow(b, now), "another address, another bucket")
	require.True(t, l.Allow(a, now.Add(time.Second)), "refilled within the window")
	v6, neighbour := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::ffff:1")
	require.True(t, l.Allow(v6, now))
	require.True(t, l.Allow(neighbour, now))
	require.False(t, l.Allow(v6, now), "one /64, one bucket")
	require.Equal(t, 3, l.Len())

	f := ratelimit.PerMinute(1)
	giveBack, _, ok := f.Reserve(a, now)
	require.True(t, ok)
	giveBack()
	_, _, ok = f.Reserve(a, now)
	require.True(t, ok, "a reservation given back is spent again")
	_, wait, ok := f.Reserve(a, now)
	require.False(t, ok)
	require.Equal(t, time.Minute, wait)
}
