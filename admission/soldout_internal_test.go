package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The holders of a sold-out sale are read once per mark, kept while no
// keyed win follows, and a read that saw another win, stock back or
// nothing at all is dropped: the keyed losers are then looked up until a
// read holds.
func TestHoldersFollowTheMark(t *testing.T) {
	var s SoldOut
	k := soldKey{id: 1}
	won := time.UnixMilli(1_000_000)
	mark := func(at, lastWin time.Duration) {
		s.Confirm(1, seckill.StockMark{Clock: won.Add(at), LastKeyedWin: won.Add(lastWin)})
	}
	known := func(user int64) (bool, bool) { return s.holds(k, user) }

	require.False(t, s.startLoad(k), "not flagged")
	s.Mark(1)
	require.False(t, s.startLoad(k), "no mark read yet")
	mark(time.Second, 0)
	require.True(t, s.startLoad(k))
	require.False(t, s.startLoad(k), "one read at a time")
	s.setHolders(k, []int64{7}, 0, won, nil)
	is, holds := known(7)
	require.True(t, is)
	require.True(t, holds)
	is, holds = known(8)
	require.True(t, is)
	require.False(t, holds)
	require.False(t, s.startLoad(k), "read already")

	mark(2*time.Second, 0)
	is, _ = known(8)
	require.True(t, is, "a later read of the same mark keeps them")
	mark(3*time.Second, 2500*time.Millisecond)
	is, _ = known(8)
	require.False(t, is, "a keyed win since: read again")

	for _, stale := range []struct {
		stock   int
		lastWin time.Duration
		err     error
	}{{0, 0, nil}, {1, 2500 * time.Millisecond, nil}, {0, 2500 * time.Millisecond, errors.New("redis down")}} {
		require.True(t, s.startLoad(k))
		s.setHolders(k, []int64{8}, stale.stock, won.Add(stale.lastWin), stale.err)
		is, _ = known(8)
		require.False(t, is, "dropped: %+v", stale)
	}
	require.True(t, s.startLoad(k))
	s.setHolders(k, nil, 0, won.Add(2500*time.Millisecond), nil)
	is, holds = known(7)
	require.True(t, is)
	require.False(t, holds)

	s.Clear(1)
	is, _ = known(7)
	require.False(t, is, "the flag lifted, its holders with it")
}
