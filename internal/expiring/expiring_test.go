package expiring

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The map never holds more than its bound, entries expire, and keys in use
// survive a flood of new ones.
func TestExpiringIsBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := New[string, int](8)
	m.Put("hot", 1, now.Add(time.Hour))
	for i := 0; i < 1000; i++ {
		m.Put(fmt.Sprint("flood-", i), i, now.Add(time.Hour))
		require.LessOrEqual(t, m.Len(), 8)
		if i%3 == 0 {
			v, ok := m.Get("hot", now)
			require.True(t, ok, "a key in use is kept (i=%d)", i)
			require.Equal(t, 1, v)
		}
	}
	_, ok := m.Get("flood-0", now)
	require.False(t, ok, "idle keys go first")

	m.Put("short", 2, now.Add(time.Second))
	_, ok = m.Get("short", now.Add(999*time.Millisecond))
	require.True(t, ok)
	_, ok = m.Get("short", now.Add(time.Second))
	require.False(t, ok, "expired")

	calls := 0
	mk := func() int { calls++; return calls }
	require.Equal(t, 1, m.GetOrPut("k", now, time.Second, mk))
	require.Equal(t, 1, m.GetOrPut("k", now.Add(900*time.Millisecond), time.Second, mk), "still there")
	require.Equal(t, 1, m.GetOrPut("k", now.Add(1800*time.Millisecond), time.Second, mk), "each use extends it")
	require.Equal(t, 2, m.GetOrPut("k", now.Add(5*time.Second), time.Second, mk), "expired: made again")
	m.Remove("k")
	_, ok = m.Get("k", now.Add(5*time.Second))
	require.False(t, ok)
}

// A lookup's key is not kept: a hit in the old generation moves the entry
// under the key it was stored with. The auth cache is asked with a view of
// the request's Authorization header (fasthttp reuses the buffer for the
// next request); kept, that view turned into the next request's token
// under the map, and a shopper's token could then answer with another
// shopper's id.
func TestLookupKeysAreNotKept(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := New[string, int](4)
	m.Put("token-of-b", 2, now.Add(time.Hour))
	m.Put("x1", 0, now.Add(time.Hour))
	m.Put("x2", 0, now.Add(time.Hour)) // the young generation was full: "token-of-b" is old now

	buf := []byte("token-of-b") // a request buffer
	view := unsafe.String(&buf[0], len(buf))
	v, ok := m.Get(view, now) // promoted to the young generation
	require.True(t, ok)
	require.Equal(t, 2, v)
	copy(buf, "token-of-a") // the buffer serves the next request

	v, ok = m.Get("token-of-b", now)
	require.True(t, ok, "the entry is still under its own key")
	require.Equal(t, 2, v)
	_, ok = m.Get("token-of-a", now)
	require.False(t, ok, "and answers for no other")
	require.Equal(t, 3, m.Len())
}
