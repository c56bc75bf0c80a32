package admission

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The holders of a sold-out sale are read once per mark, kept while no
// keyed win follows and no stock comes back, and a read that saw another
// win, stock back or nothing at all is dropped: the keyed losers are then
// looked up until a read holds.
func TestHoldersFollowTheMark(t *testing.T) {
	var s SoldOut
	k := soldKey{id: 1}
	won := time.UnixMilli(1_000_000)
	var reopened time.Time
	mark := func(at, lastWin time.Duration) {
		s.Confirm(1, seckill.StockMark{Clock: won.Add(at), LastKeyedWin: won.Add(lastWin), Reopened: reopened})
	}
	read := func(stock int, lastWin time.Duration) seckill.StockMark {
		return seckill.StockMark{Stock: stock, LastKeyedWin: won.Add(lastWin), Reopened: reopened}
	}
	known := func(user int64) (bool, bool) { return s.holds(k, user) }

	require.False(t, s.startLoad(k), "not flagged")
	s.Mark(1)
	require.False(t, s.startLoad(k), "no mark read yet")
	mark(time.Second, 0)
	require.True(t, s.startLoad(k))
	require.False(t, s.startLoad(k), "one read at a time")
	s.setHolders(k, []int64{7}, read(0, 0), nil)
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
		s.setHolders(k, []int64{8}, read(stale.stock, stale.lastWin), stale.err)
		is, _ = known(8)
		require.False(t, is, "dropped: %+v", stale)
	}
	require.True(t, s.startLoad(k))
	s.setHolders(k, nil, read(0, 2500*time.Millisecond), nil)
	is, holds = known(7)
	require.True(t, is)
	require.False(t, holds)

	// Units came back and sold again within one watcher interval (on
	// another process, perhaps without a key): the stock reads zero at
	// both reads, the latest keyed win is the same, the return of stock
	// is not.
	reopened = won.Add(3500 * time.Millisecond)
	mark(4*time.Second, 2500*time.Millisecond)
	is, _ = known(7)
	require.False(t, is, "stock came back since the read: read again")
	require.True(t, s.startLoad(k))
	stale := read(0, 2500*time.Millisecond)
	stale.Reopened = won
	s.setHolders(k, []int64{7}, stale, nil)
	is, _ = known(7)
	require.False(t, is, "a read from before the return of stock is dropped")
	require.True(t, s.startLoad(k))
	s.setHolders(k, []int64{7}, read(0, 2500*time.Millisecond), nil)
	is, holds = known(7)
	require.True(t, is)
	require.True(t, holds, "the new winner is named")

	s.Clear(1)
	is, _ = known(7)
	require.False(t, is, "the flag lifted, its holders with it")
}
