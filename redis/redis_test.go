package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

func gateEnv(t *testing.T, stock, limit int) (*testenv.Env, *seckill.Session) {
	return gateEnvOn(t, "", stock, limit)
}

// gateEnvOn is gateEnv on server (SECKILL_REDIS_ADDR's form; "" for the
// default single node).
func gateEnvOn(t *testing.T, server string, stock, limit int) (*testenv.Env, *seckill.Session) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	return e, e.Session(stock, limit, 100)
}

// Thousands of concurrent admissions against little stock, coalesced into
// batches and one call each: the script deducts exactly the stock, no user
// passes the limit, and stock plus reservations always equals the total.
func TestAdmitNeverOversells(t *testing.T) {
	testenv.OnTopologies(t, func(t *testing.T, server string) {
		for _, coalesce := range []bool{true, false} {
			t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) { admitNeverOversells(t, server, coalesce) })
		}
	})
}

func admitNeverOversells(t *testing.T, server string, coalesce bool) {
	const stock, limit, users, tries = 100, 3, 400, 5
	e, sess := gateEnvOn(t, server, stock, limit)
	e.Gate.Coalesce = coalesce
	ctx := context.Background()
	var won, soldOut, overLimit atomic.Int64
	perUser := make([]atomic.Int64, users)
	var wg sync.WaitGroup
	for u := 0; u < users; u++ {
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				no := fmt.Sprintf("%d-u%d-%d", sess.ID, u, i)
				r, _, err := e.Gate.Admit(ctx, sess, int64(u+1), 1, no, "t", time.Now())
				switch seckill.ErrorCode(err) {
				case "":
					won.Add(1)
					perUser[u].Add(1)
					require.Len(t, r.Slots, 1)
				case seckill.ESOLDOUT:
					soldOut.Add(1)
				case seckill.ELIMIT:
					overLimit.Add(1)
				default:
					t.Errorf("admit: %v", err)
				}
			}()
		}
	}
	wg.Wait()
	require.EqualValues(t, stock, won.Load())
	require.EqualValues(t, users*tries-stock, soldOut.Load()+overLimit.Load())
	for u := range perUser {
		require.LessOrEqual(t, perUser[u].Load(), int64(limit))
	}
	snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 0, snap.Stock)
	sum := 0
	for _, q := range snap.Reservations {
		sum += q
	}
	require.Equal(t, stock, sum)
}

// Slots: a user's units take distinct slots in 1..limit; released slots are
// handed out again.
func TestAdmitHandsOutDistinctSlots(t *testing.T) {
	e, sess := gateEnv(t, 10, 3)
	ctx := context.Background()
	a, _, err := e.Gate.Admit(ctx, sess, 7, 2, "1-a", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, a.Slots)
	_, _, err = e.Gate.Admit(ctx, sess, 7, 2, "1-b", "t", time.Now())
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err))
	b, _, err := e.Gate.Admit(ctx, sess, 7, 1, "1-c", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, []int{3}, b.Slots)
	n, err := e.Gate.Release(ctx, sess.ID, "1-a")
	require.NoError(t, err)
	require.Equal(t, 2, n)
	c, _, err := e.Gate.Admit(ctx, sess, 7, 2, "1-d", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, c.Slots)
	// An order number is reserved once.
	_, _, err = e.Gate.Admit(ctx, sess, 8, 1, "1-d", "t", time.Now())
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))
}

// Release gives back exactly once, however many times and however
// concurrently it runs (activity retries, a relay and a workflow).
func TestReleaseIsExactlyOnce(t *testing.T) { testenv.OnTopologies(t, testReleaseIsExactlyOnce) }

func testReleaseIsExactlyOnce(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 5, 2)
	ctx := context.Background()
	_, left, err := e.Gate.Admit(ctx, sess, 7, 2, "1-a", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, 3, left)
	var total atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := e.Gate.Release(ctx, sess.ID, "1-a")
			require.NoError(t, err)
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	require.EqualValues(t, 2, total.Load())
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 5, stock)
	// The user's limit came back too.
	_, _, err = e.Gate.Admit(ctx, sess, 7, 2, "1-b", "t", time.Now())
	require.NoError(t, err)
}

// An unpreheated session refuses with UNAVAILABLE; preheat never overwrites
// live stock; a forced rebuild restores stock, reservations and limits.
func TestPreheatAndRebuild(t *testing.T) { testenv.OnTopologies(t, testPreheatAndRebuild) }

func testPreheatAndRebuild(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	ctx := context.Background()
	sess := &seckill.Session{ID: 99, PerUserLimit: 2}
	_, _, err := e.Gate.Admit(ctx, sess, 1, 1, "99-a", "t", time.Now())
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))

	n, err := e.Gate.Preheat(ctx, 99, 10)
	require.NoError(t, err)
	require.Equal(t, 10, n)
	_, _, err = e.Gate.Admit(ctx, sess, 1, 2, "99-a", "t", time.Now())
	require.NoError(t, err)
	n, err = e.Gate.Preheat(ctx, 99, 10)
	require.NoError(t, err)
	require.Equal(t, 8, n, "preheat must not overwrite live stock")

	require.NoError(t, e.Gate.Rebuild(ctx, 99, 8, nil, []seckill.Reservation{
		{OrderNo: "99-a", SessionID: 99, UserID: 1, Quantity: 2, Slots: []int{1, 2}, ReservedAt: time.Now(), TraceID: "t"},
	}))
	_, _, err = e.Gate.Admit(ctx, sess, 1, 1, "99-b", "t", time.Now())
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(err), "rebuilt reservations keep the user's limit")
	o, err := e.Gate.Order(ctx, "99-a")
	require.NoError(t, err)
	require.Equal(t, seckill.StatusQueued, o.Status)
	require.Equal(t, int64(1), o.UserID)
	released, err := e.Gate.Release(ctx, 99, "99-a")
	require.NoError(t, err)
	require.Equal(t, 2, released)
	stock, _, err := e.Gate.Stock(ctx, 99)
	require.NoError(t, err)
	require.Equal(t, 10, stock)
}

// Cached order views never go back in time: a stale writer loses.
func TestPutOrderKeepsTheNewestView(t *testing.T) {
	testenv.OnTopologies(t, testPutOrderKeepsTheNewestView)
}

func testPutOrderKeepsTheNewestView(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	ctx := context.Background()
	t0 := time.Now().UTC()
	o := &seckill.Order{OrderNo: "5-a", SessionID: 5, UserID: 1, Quantity: 1, Status: seckill.StatusClosed, UpdatedAt: t0}
	require.NoError(t, e.Gate.PutOrder(ctx, o))
	stale := *o
	stale.Status, stale.UpdatedAt = seckill.StatusWaitPay, t0.Add(-time.Millisecond)
	require.NoError(t, e.Gate.PutOrder(ctx, &stale))
	got, err := e.Gate.Order(ctx, "5-a")
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, got.Status)
	newer := *o
	newer.Status, newer.UpdatedAt = seckill.StatusRefundPending, t0.Add(time.Millisecond)
	require.NoError(t, e.Gate.PutOrder(ctx, &newer))
	got, err = e.Gate.Order(ctx, "5-a")
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefundPending, got.Status)
}

// Reconcile's Redis side checks the per-user marks against the live
// reservations: a corrupted mark is reported.
func TestSnapshotChecksPerUserMarks(t *testing.T) {
	testenv.OnTopologies(t, testSnapshotChecksPerUserMarks)
}

func testSnapshotChecksPerUserMarks(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 5, 2)
	ctx := context.Background()
	_, _, err := e.Gate.Admit(ctx, sess, 7, 2, "1-m", "t", time.Now())
	require.NoError(t, err)
	snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, snap.MarkMismatches)
	// Someone resets the user's count by hand.
	require.NoError(t, e.Redis.HSet(ctx, fmt.Sprintf("%s:{s%d}:buyers", e.Prefix, sess.ID), "7", 0).Err())
	snap, err = e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 1, snap.MarkMismatches)
}

// Reservation reads back what the admission script wrote for an order (the
// request its workflow is started with), and NOT_FOUND once it is
// released or for a number never admitted.
func TestReservationByOrderNumber(t *testing.T) {
	testenv.OnTopologies(t, testReservationByOrderNumber)
}

func testReservationByOrderNumber(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 5, 2)
	ctx := context.Background()
	no := fmt.Sprintf("%d-resv", sess.ID)
	at := time.Now().Truncate(time.Millisecond)
	want, _, err := e.Gate.Admit(ctx, sess, 77, 2, no, "trace-resv", at)
	require.NoError(t, err)

	got, err := e.Gate.Reservation(ctx, no)
	require.NoError(t, err)
	require.Equal(t, want.OrderNo, got.OrderNo)
	require.Equal(t, sess.ID, got.SessionID)
	require.Equal(t, int64(77), got.UserID)
	require.Equal(t, 2, got.Quantity)
	require.Equal(t, want.Slots, got.Slots)
	require.True(t, at.Equal(got.ReservedAt), "%v vs %v", at, got.ReservedAt)
	require.Equal(t, "trace-resv", got.TraceID)

	_, err = e.Gate.Reservation(ctx, fmt.Sprintf("%d-never", sess.ID))
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	_, err = e.Gate.Reservation(ctx, "not-an-order")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	_, err = e.Gate.Release(ctx, sess.ID, no)
	require.NoError(t, err)
	_, err = e.Gate.Reservation(ctx, no)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
}

// A starter's hold renews the pending-start entries it holds, so the
// worker's relay (entries older than its minimum age) leaves them alone;
// an entry whose start was confirmed is not brought back by a late hold.
func TestHoldRenewsOnlyPendingEntries(t *testing.T) {
	testenv.OnTopologies(t, testHoldRenewsOnlyPendingEntries)
}

func testHoldRenewsOnlyPendingEntries(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 5, 5)
	ctx := context.Background()
	admitted := time.Now().Add(-time.Minute)
	for _, no := range []string{"1-h1", "1-h2"} {
		_, _, err := e.Gate.Admit(ctx, sess, 7, 1, no, "t", admitted)
		require.NoError(t, err)
	}
	old := func() []string {
		var nos []string
		rs, err := e.Gate.Pending(ctx, sess.ID, time.Now().Add(-30*time.Second), 10)
		require.NoError(t, err)
		for _, r := range rs {
			nos = append(nos, r.OrderNo)
		}
		return nos
	}
	require.ElementsMatch(t, []string{"1-h1", "1-h2"}, old())

	require.NoError(t, e.Gate.Started(ctx, sess.ID, "1-h2"))
	require.NoError(t, e.Gate.Hold(ctx, sess.ID, []string{"1-h1", "1-h2"}, time.Now()))
	require.Empty(t, old(), "held: not the relay's to start")
	n, _, err := e.Gate.PendingStats(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the confirmed start stays cleared")
	rs, err := e.Gate.Pending(ctx, sess.ID, time.Now().Add(time.Second), 10)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, "1-h1", rs[0].OrderNo)
}

// An operator's add-stock racing the preheat is counted exactly once,
// whichever order its two halves (MySQL, then Redis) and the preheat's
// (the MySQL read, then the Redis load) interleave in; a retry of the add
// never counts it twice. 10 units, 5 added.
func TestAddStockRacingThePreheat(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	for i, c := range []struct {
		name string
		// heldByRead: the add's MySQL commit came before the preheat read
		// the stock (the figure holds it); redisFirst: the add's Redis
		// half ran before the preheat's load.
		heldByRead, redisFirst bool
	}{
		{"added, then preheated", true, true},
		{"the read before the add, the load after its Redis half", false, true},
		{"the add's Redis half after the load, the read after its MySQL half", true, false},
		{"the read before the add, its Redis half after the load", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := int64(500 + i)
			figure, applied := 10, []string(nil)
			if c.heldByRead {
				figure, applied = 15, []string{"add-5"}
			}
			add := func() {
				_, err := e.Gate.AddStock(ctx, &seckill.Session{ID: id, PerUserLimit: 1}, 5, 0, "add-5")
				require.NoError(t, err)
			}
			if c.redisFirst {
				add()
			}
			_, err := e.Gate.PreheatHolding(ctx, id, figure, nil, applied)
			require.NoError(t, err)
			if !c.redisFirst {
				add()
			}
			add() // the operator's retry
			n, _, err := e.Gate.Stock(ctx, id)
			require.NoError(t, err)
			require.Equal(t, 15, n, "the 5 units are on sale once")
		})
	}
}

// A retired session takes no admission, even from an API whose cached
// session still shows the sale open: its stock is gone at once, so the
// script refuses (not preheated) and reserves nothing; a session with a
// reservation still waiting for its workflow start is not retired; an
// idempotency key keeps its answer.
func TestRetiredSessionAdmitsNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	sess := &seckill.Session{ID: 77, PerUserLimit: 1}
	_, err := e.Gate.Preheat(ctx, sess.ID, 3)
	require.NoError(t, err)
	_, _, err = e.Gate.Admit(ctx, sess, 1, 1, "77-a", "t", time.Now())
	require.NoError(t, err)

	retired, err := e.Gate.Retire(ctx, sess.ID, time.Hour)
	require.NoError(t, err)
	require.False(t, retired, "77-a waits for its workflow start")
	require.NoError(t, e.Gate.Started(ctx, sess.ID, "77-a"))
	retired, err = e.Gate.Retire(ctx, sess.ID, time.Hour)
	require.NoError(t, err)
	require.True(t, retired)
	ids, err := e.Gate.Sessions(ctx)
	require.NoError(t, err)
	require.NotContains(t, ids, sess.ID)

	_, _, err = e.Gate.Admit(ctx, sess, 2, 1, "77-b", "t", time.Now())
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	_, err = e.Gate.Reservation(ctx, "77-b")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "nothing reserved")
	o, err := e.Gate.Order(ctx, "77-a")
	require.NoError(t, err, "the views stay readable")
	require.Equal(t, int64(1), o.UserID)
	// A refund after the end gives the reservation back, but puts no unit
	// on sale again.
	n, err := e.Gate.Release(ctx, sess.ID, "77-a")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, preheated, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.False(t, preheated)
}
