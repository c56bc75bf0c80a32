package redis_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The call that sells a sale out says so with Redis's clock and the latest
// keyed win (the mark the sold-out memory would otherwise wait for from its
// watcher's next read); a call that leaves stock says nothing.
func TestSellOutCarriesItsMark(t *testing.T) {
	e, sess := gateEnv(t, 2, 1)
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	first, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, 1, "1-a", v7(t, time.Now())))
	require.NoError(t, err)
	require.Nil(t, first.SoldOut, "one unit left")
	last, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, 2, "1-b", v7(t, time.Now())))
	require.NoError(t, err)
	require.NotNil(t, last.SoldOut, "the last unit sold")
	m := *last.SoldOut
	require.Zero(t, m.Stock)
	require.WithinRange(t, m.Clock, before, time.Now().Add(time.Second))
	require.Equal(t, m.Clock, m.LastKeyedWin, "the last win was keyed, in this call")
	watcher, err := e.Gate.StockMark(ctx, sess.ID, 0)
	require.NoError(t, err)
	require.Equal(t, watcher.LastKeyedWin, m.LastKeyedWin, "the watcher's read says the same")

	lost, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 3, 1, "1-c", ""))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))
	require.NotNil(t, lost.SoldOut, "a refusal in a sold-out sale carries the mark too")
}

// PinnedOrRefused, a lookup run in the admission script coalesced with
// the session's other calls, gives what the script gives a keyed attempt
// in a sold-out sale, deciding nothing: the winner's key its order, a key
// reused with another body IDEMPOTENCY_MISMATCH, a shopper at the limit
// LIMIT_EXCEEDED, everyone else SOLD_OUT; with units back on sale it
// still reserves nothing.
func TestLookupAnswersAsTheScript(t *testing.T) {
	e, sess := gateEnv(t, 1, 1)
	ctx := context.Background()
	winKey := v7(t, time.Now())
	won, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, 7, "1-won", winKey))
	require.NoError(t, err)

	look := func(user int64, qty int, key string) (*seckill.Admission, error) {
		a := keyed(t, sess, user, "1-look", key)
		a.Quantity, a.Fingerprint = qty, map[int]string{1: "1", 2: "2"}[qty]
		return e.Gate.PinnedOrRefused(ctx, a)
	}
	var wg sync.WaitGroup
	for range 50 { // concurrent lookups share script calls
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm, err := look(7, 1, winKey)
			require.NoError(t, err)
			require.Equal(t, won.OrderNo, adm.OrderNo)
			require.True(t, adm.Replayed)
			require.NotNil(t, adm.Reservation, "its start is still pending")
		}()
	}
	wg.Wait()
	_, err = look(7, 2, winKey)
	require.Equal(t, seckill.EIDEMPOTENCY, seckill.ErrorCode(err))
	_, err = look(7, 1, v7(t, time.Now()))
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err), "user 7 holds the limit")
	_, err = look(8, 1, v7(t, time.Now()))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))
	_, err = look(8, 1, "not-a-uuid")
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))
	none, err := e.Gate.PinnedOrRefused(ctx, attempt(sess, 8, 1, "", ""))
	require.NoError(t, err)
	require.Nil(t, none, "no key, nothing to look up")

	n, err := e.Gate.Release(ctx, sess.ID, won.OrderNo)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = look(7, 1, v7(t, time.Now()))
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err), "user 7's holdings went down after the key's time minus the skew")
	_, err = look(9, 1, v7(t, time.Now()))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err), "a lookup never reserves")
	requireStockAndReservations(t, e, sess.ID, 1, 0)
}

// Holders names every shopper who holds units of a sold-out sale, keyed
// or not, and those whose units went back (their release stamped them),
// with the stock and the latest keyed win as the watcher's mark reads
// them: anyone else has no pin, and the lookup refuses them SOLD_OUT.
func TestHoldersNameEveryWinner(t *testing.T) {
	e, sess := gateEnv(t, 3, 1)
	ctx := context.Background()
	users, read, err := e.Gate.Holders(ctx, sess.ID)
	require.NoError(t, err)
	require.Empty(t, users)
	require.Equal(t, 3, read.Stock)
	require.True(t, read.LastKeyedWin.IsZero(), "no keyed win yet")

	_, err = e.Gate.AdmitAttempt(ctx, keyed(t, sess, 7, "1-a", v7(t, time.Now())))
	require.NoError(t, err)
	plain, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 8, 1, "1-b", ""))
	require.NoError(t, err)
	_, err = e.Gate.AdmitAttempt(ctx, keyed(t, sess, 9, "1-c", v7(t, time.Now())))
	require.NoError(t, err)
	_, err = e.Gate.AdmitAttempt(ctx, keyed(t, sess, 10, "1-d", v7(t, time.Now())))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))
	mark, err := e.Gate.StockMark(ctx, sess.ID, 0)
	require.NoError(t, err)

	users, read, err = e.Gate.Holders(ctx, sess.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{7, 8, 9}, users, "the winners, keyed or not; not the loser")
	require.Zero(t, read.Stock)
	require.Equal(t, mark.LastKeyedWin, read.LastKeyedWin)
	require.Equal(t, mark.Reopened, read.Reopened)

	_, err = e.Gate.Release(ctx, sess.ID, plain.OrderNo)
	require.NoError(t, err)
	users, read, err = e.Gate.Holders(ctx, sess.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{7, 8, 9}, users, "user 8's units went back: stamped, still named")
	require.Equal(t, 1, read.Stock)
	require.True(t, read.Reopened.After(mark.Reopened), "the stock came back: stamped")

	// Sold again without a key: the stock and the latest keyed win read
	// as before, the return of stock does not, and the new winner is named.
	_, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 11, 1, "1-e", ""))
	require.NoError(t, err)
	again, err := e.Gate.StockMark(ctx, sess.ID, 0)
	require.NoError(t, err)
	require.Zero(t, again.Stock)
	require.Equal(t, mark.LastKeyedWin, again.LastKeyedWin)
	require.Equal(t, read.Reopened, again.Reopened)
	users, _, err = e.Gate.Holders(ctx, sess.ID)
	require.NoError(t, err)
	require.Contains(t, users, int64(11))
}
