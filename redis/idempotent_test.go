package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
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

// An Idempotency-Key pins its first decided answer: later attempts with
// the key (new order numbers) replay it, including the first attempt's
// live reservation; another body is refused; SOLD_OUT stays SOLD_OUT for
// the key after stock came back; another user's same key is another key.
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

	// Released stock comes back; the key that got SOLD_OUT keeps it.
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
