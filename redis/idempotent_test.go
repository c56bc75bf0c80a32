package redis_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
)

func requireStockAndReservations(t *testing.T, e *testenv.Env, id int64, stock, reservations int) {
	t.Helper()
	snap, err := e.Gate.SessionSnapshot(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, stock, snap.Stock)
	require.Len(t, snap.Reservations, reservations)
	require.Zero(t, snap.MarkMismatches)
}

// The script run twice with the same order number (a retry after a lost
// reply) answers as the first run did: reserved, same slots, stock
// deducted once, one reservation. Also once the stock is gone, and once
// the reservation was released (the order closed): it never reserves again.
func TestAdmitSameOrderNumberTwice(t *testing.T) {
	testenv.OnTopologies(t, testAdmitSameOrderNumberTwice)
}

func testAdmitSameOrderNumberTwice(t *testing.T, server string) {
	for _, coalesce := range []bool{true, false} {
		t.Run(fmt.Sprintf("coalesce=%v", coalesce), func(t *testing.T) {
			e, sess := gateEnvOn(t, server, 3, 2)
			e.Gate.Coalesce = coalesce
			ctx := context.Background()
			first, left, err := e.Gate.Admit(ctx, sess, 7, 2, "1-twice", "t1", time.Now())
			require.NoError(t, err)
			require.Equal(t, 1, left)
			again, left, err := e.Gate.Admit(ctx, sess, 7, 2, "1-twice", "t1", time.Now())
			require.NoError(t, err, "a re-run answers as the first run did")
			require.Equal(t, first.Slots, again.Slots)
			require.Equal(t, 1, left)
			requireStockAndReservations(t, e, sess.ID, 1, 1)

			_, _, err = e.Gate.Admit(ctx, sess, 8, 1, "1-other", "t2", time.Now())
			require.NoError(t, err)
			again, left, err = e.Gate.Admit(ctx, sess, 7, 2, "1-twice", "t1", time.Now())
			require.NoError(t, err, "a re-run must not answer SOLD_OUT")
			require.Equal(t, first.Slots, again.Slots)
			require.Equal(t, 0, left)

			n, err := e.Gate.Release(ctx, sess.ID, "1-twice")
			require.NoError(t, err)
			require.Equal(t, 2, n)
			_, left, err = e.Gate.Admit(ctx, sess, 7, 2, "1-twice", "t1", time.Now())
			require.NoError(t, err)
			require.Equal(t, 2, left, "a re-run after the release must not reserve again")
			requireStockAndReservations(t, e, sess.ID, 2, 1)

			// The same order number from another purchase is refused.
			_, _, err = e.Gate.Admit(ctx, sess, 9, 1, "1-twice", "t3", time.Now())
			require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))
		})
	}
}

func attempt(sess *seckill.Session, user int64, qty int, no, key string) *seckill.Attempt {
	return &seckill.Attempt{Session: sess, UserID: user, Quantity: qty, OrderNo: no, TraceID: "trace-" + no,
		Now: time.Now(), IdempotencyKey: key, Fingerprint: fmt.Sprint(qty)}
}

// An Idempotency-Key pins its reservation: later attempts with the key
// (new order numbers) replay it, including the first attempt's live
// reservation; another body is refused; a key that got SOLD_OUT stays
// refused after stock came back; another user's same key is another key.
func TestIdempotencyKeyPinsTheAnswer(t *testing.T) {
	testenv.OnTopologies(t, testIdempotencyKeyPinsTheAnswer)
}

func testIdempotencyKeyPinsTheAnswer(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 2, 2)
	ctx := context.Background()
	adm, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 7, 1, "1-a", "key-1"))
	require.NoError(t, err)
	require.False(t, adm.Replayed)
	require.Equal(t, "1-a", adm.OrderNo)

	re, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 7, 1, "1-b", "key-1"))
	require.NoError(t, err)
	require.True(t, re.Replayed)
	require.Equal(t, "1-a", re.OrderNo)
	require.NotNil(t, re.Reservation)
	require.Equal(t, "trace-1-a", re.Reservation.TraceID, "the replay carries the first attempt's reservation")
	require.Equal(t, adm.Reservation.Slots, re.Reservation.Slots)
	requireStockAndReservations(t, e, sess.ID, 1, 1)

	pinned, err := e.Gate.Pinned(ctx, attempt(sess, 7, 1, "", "key-1"))
	require.NoError(t, err)
	require.Equal(t, "1-a", pinned.OrderNo)
	none, err := e.Gate.Pinned(ctx, attempt(sess, 7, 1, "", "key-never"))
	require.NoError(t, err)
	require.Nil(t, none)

	_, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 7, 2, "1-c", "key-1"))
	require.Equal(t, seckill.EIDEMPOTENCY, seckill.ErrorCode(err))
	_, err = e.Gate.Pinned(ctx, attempt(sess, 7, 2, "", "key-1"))
	require.Equal(t, seckill.EIDEMPOTENCY, seckill.ErrorCode(err))
	requireStockAndReservations(t, e, sess.ID, 1, 1)

	// Another user's key of the same name is not this one.
	_, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 8, 1, "1-d", "key-1"))
	require.NoError(t, err)
	_, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 9, 1, "1-e", "key-9"))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))

	// Released stock comes back; the key that got SOLD_OUT stays refused
	// (it carries no time: older than any return).
	_, err = e.Gate.Release(ctx, sess.ID, "1-d")
	require.NoError(t, err)
	_, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 9, 1, "1-f", "key-9"))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(err))
	// A closed order's key still answers its order number.
	_, err = e.Gate.Release(ctx, sess.ID, "1-a")
	require.NoError(t, err)
	re, err = e.Gate.AdmitAttempt(ctx, attempt(sess, 7, 1, "1-g", "key-1"))
	require.NoError(t, err)
	require.Equal(t, "1-a", re.OrderNo)
	require.Nil(t, re.Reservation, "nothing left to start")
	requireStockAndReservations(t, e, sess.ID, 2, 0)
}

// v7 stamps a UUIDv7 key with at.
func v7(t *testing.T, at time.Time) string {
	t.Helper()
	k := testenv.KeyAt(at)
	got, ok := admission.KeyTime(k)
	require.True(t, ok)
	require.Equal(t, at.UnixMilli(), got.UnixMilli())
	return k
}

func keyed(t *testing.T, sess *seckill.Session, user int64, no, key string) *seckill.Attempt {
	a := attempt(sess, user, 1, no, key)
	a.KeyTime, _ = admission.KeyTime(key)
	return a
}

// A refused key is stored nowhere, and still never buys later: SOLD_OUT
// stays SOLD_OUT after units come back, LIMIT_EXCEEDED after the shopper's
// own order is released, while a key stamped after the return (beyond the
// clock skew) buys. A key stamped ahead of the clock is refused.
func TestRefusedKeyStaysRefused(t *testing.T) {
	testenv.OnTopologies(t, testRefusedKeyStaysRefused)
}

func testRefusedKeyStaysRefused(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 2, 1)
	ctx := context.Background()
	admit := func(user int64, no, key string) error {
		_, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, user, no, key))
		return err
	}
	require.NoError(t, admit(7, "1-won", v7(t, time.Now())))
	lostKey, overKey := v7(t, time.Now()), v7(t, time.Now())
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(admit(7, "1-over", overKey)), "user 7 holds the limit")
	require.NoError(t, admit(11, "1-last", v7(t, time.Now())))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(admit(8, "1-lost", lostKey)))
	future := admit(9, "1-future", v7(t, time.Now().Add(time.Minute)))
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(future))
	require.ErrorContains(t, future, "ahead of the server's clock")
	pinned, err := e.Gate.Pinned(ctx, keyed(t, sess, 8, "", lostKey))
	require.NoError(t, err)
	require.Nil(t, pinned, "a refusal is not stored")

	// User 7's order closes: the unit is back, and user 7 holds nothing.
	n, err := e.Gate.Release(ctx, sess.ID, "1-won")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(admit(8, "1-lost-2", lostKey)), "refused before the return: refused after")
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(admit(7, "1-over-2", overKey)), "refused before the release: refused after")
	// A key stamped within the skew of the return may have been seen
	// before it: refused too. One stamped past it is new.
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(admit(10, "1-near", v7(t, time.Now()))))
	time.Sleep(seckill.KeyClockSkew + 50*time.Millisecond)
	require.NoError(t, admit(8, "1-new", v7(t, time.Now())), "a key stamped after the return buys")
	requireStockAndReservations(t, e, sess.ID, 0, 2)
	// Still refused; its shopper now holds the limit, and a key that may
	// have been refused before is told so (nothing records whether it
	// heard SOLD_OUT then: see admit.lua).
	require.Equal(t, seckill.ELIMIT, seckill.ErrorCode(admit(8, "1-lost-3", lostKey)))
	require.Equal(t, seckill.ESOLDOUT, seckill.ErrorCode(admit(10, "1-near-2", v7(t, time.Now()))))
}

// Keyed losers write nothing: the session's keys weigh the same after
// 10 and after many more refused keyed attempts (SOLD_OUT and
// LIMIT_EXCEEDED, each a fresh key). SECKILL_KEYED_LOSERS sets how many
// (default 100,000; docs/BENCHMARKS.md's figure is 1,000,000).
func TestKeyedLosersWriteNothing(t *testing.T) {
	e, sess := gateEnv(t, 2, 1)
	ctx := context.Background()
	for i, user := range []int64{1, 2} {
		_, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, user, fmt.Sprintf("1-w%d", i), v7(t, time.Now())))
		require.NoError(t, err)
	}
	losers := 100_000
	if v := os.Getenv("SECKILL_KEYED_LOSERS"); v != "" {
		var err error
		losers, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	lose := func(from, to int) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					// Shoppers 1 and 2 hold their limit; the rest find it sold out.
					user := int64(1 + i%1000)
					_, err := e.Gate.AdmitAttempt(ctx, keyed(t, sess, user, fmt.Sprintf("1-l%d", i), v7(t, time.Now())))
					if code := seckill.ErrorCode(err); code != seckill.ESOLDOUT && code != seckill.ELIMIT {
						t.Errorf("attempt %d: %v", i, err)
						return
					}
				}
			}()
		}
		for i := from; i < to; i++ {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	lose(0, 10)
	before := sessionBytes(t, e, sess.ID)
	start := time.Now()
	lose(10, losers)
	after := sessionBytes(t, e, sess.ID)
	t.Logf("session keys: %d bytes after 10 keyed losers, %d after %d (%.0f attempts/s)",
		before, after, losers, float64(losers-10)/time.Since(start).Seconds())
	require.Equal(t, before, after, "keyed losers changed the session's keys")
	requireStockAndReservations(t, e, sess.ID, 0, 2)
}

// sessionBytes is MEMORY USAGE summed over a session's keys.
func sessionBytes(t *testing.T, e *testenv.Env, id int64) int64 {
	t.Helper()
	ctx := context.Background()
	keys, err := e.Redis.Keys(ctx, fmt.Sprintf("%s:{s%d}:*", e.Prefix, id)).Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	var sum int64
	for _, k := range keys {
		n, err := e.Redis.MemoryUsage(ctx, k, 0).Result()
		require.NoError(t, err)
		sum += n
	}
	return sum
}

// Attempts with one key racing each other (in one batch or not): the first
// that runs wins, every other replays it.
func TestIdempotencyKeyRace(t *testing.T) {
	e, sess := gateEnv(t, 10, 5)
	ctx := context.Background()
	const n = 50
	nos := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 7, 1, fmt.Sprintf("1-r%d", i), "same-click"))
			require.NoError(t, err)
			nos[i] = adm.OrderNo
		}()
	}
	wg.Wait()
	for _, no := range nos {
		require.Equal(t, nos[0], no)
	}
	requireStockAndReservations(t, e, sess.ID, 9, 1)
}

// A ticket is consumed by one owner: the same owner again (a retried SET,
// the retry of the same purchase) is let through, anyone else is not.
func TestConsumeTicketIsIdempotent(t *testing.T) {
	testenv.OnTopologies(t, testConsumeTicketIsIdempotent)
}

func testConsumeTicketIsIdempotent(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	ctx := context.Background()
	for _, c := range []struct {
		owner string
		fresh bool
	}{{"k:a", true}, {"k:a", true}, {"k:b", false}, {"trace-1", false}} {
		fresh, err := e.Gate.ConsumeTicket(ctx, 1, "nonce-1", c.owner, time.Minute)
		require.NoError(t, err)
		require.Equal(t, c.fresh, fresh, c.owner)
	}
}

// Replies held back longer than the read timeout: the client sends
// nothing again by itself, the gate retries the idempotent script, and the
// attempt ends reserved exactly once (or UNAVAILABLE while Redis stays
// slow; a re-run then tells).
func TestAdmitThroughSlowReplies(t *testing.T) {
	e, sess := gateEnv(t, 5, 1)
	x := testenv.StartToxi(t, "redis-slow", "127.0.0.1:6379")
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{x.Addr}, ReadTimeout: 100 * time.Millisecond, PoolSize: 4})
	t.Cleanup(func() { rdb.Close() })
	g := redis.New(rdb, e.Prefix)
	ctx := context.Background()
	require.NoError(t, g.Ping(ctx))

	slow := x.Latency(150*time.Millisecond, 0)
	go func() { time.Sleep(200 * time.Millisecond); slow() }()
	r, left, err := g.Admit(ctx, sess, 7, 1, "1-slow", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, 4, left)
	require.Equal(t, []int{1}, r.Slots)
	requireStockAndReservations(t, e, sess.ID, 4, 1)

	// Replies that never come: UNAVAILABLE, and the truth afterwards.
	stall := x.Stall()
	_, _, err = g.Admit(ctx, sess, 8, 1, "1-stalled", "t", time.Now())
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))
	// A caller that stops waiting is told the same, never a raw context
	// error (which the API answered 500).
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = g.AdmitAttempt(short, attempt(sess, 9, 1, "1-impatient", "key-9"))
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	stall()
	x.Clear()
	_, _, err = e.Gate.Admit(ctx, sess, 8, 1, "1-stalled", "t", time.Now())
	require.NoError(t, err)
	adm, err := e.Gate.AdmitAttempt(ctx, attempt(sess, 9, 1, "1-patient", "key-9"))
	require.NoError(t, err)
	require.Contains(t, []string{"1-impatient", "1-patient"}, adm.OrderNo, "the key's one purchase")
	require.Equal(t, 2, adm.Left)
	requireStockAndReservations(t, e, sess.ID, 2, 3)
}

// The client never re-sends a command by itself, whatever it is told: a
// re-sent script (the rate limiter's takes a token per run) would decide
// twice. The gate retries the idempotent commands itself.
func TestNewClientNeverRetriesBlindly(t *testing.T) {
	one := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: 5})
	t.Cleanup(func() { one.Close() })
	require.IsType(t, &goredis.Client{}, one, "one address: a single node")
	require.Zero(t, one.(*goredis.Client).Options().MaxRetries, "-1 is kept as 0: no retry")

	cluster := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, MaxRetries: 5})
	t.Cleanup(func() { cluster.Close() })
	require.IsType(t, &goredis.ClusterClient{}, cluster, "several addresses: a Redis Cluster's seeds")
	require.LessOrEqual(t, cluster.(*goredis.ClusterClient).Options().MaxRetries, 0)

	sentinel := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{"127.0.0.1:1"}, MasterName: "mymaster", MaxRetries: 5})
	t.Cleanup(func() { sentinel.Close() })
	require.IsType(t, &goredis.Client{}, sentinel, "a master name: Sentinel failover (a plain client that asks the Sentinels)")
	require.Zero(t, sentinel.(*goredis.Client).Options().MaxRetries)
}
