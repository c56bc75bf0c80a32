package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
)

// TestMain stops the Redis Cluster the tests share.
func TestMain(m *testing.M) { testenv.Main(m) }

// Every key of a session hashes to one slot (the {s<id>} hash tag), so
// each script's KEYS, the rebuild's MULTI and the pinned-answer pipeline
// stay on one node; the key layout in the package comment is what the
// cluster itself computes.
func TestKeysOfASessionShareOneSlot(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: testenv.SharedRedisCluster(t).Addr()})
	ctx := context.Background()
	for _, id := range []int64{1, 7, 12345} {
		base := fmt.Sprintf("%s:{s%d}:", e.Prefix, id)
		want, err := e.Redis.ClusterKeySlot(ctx, base+"stock").Result()
		require.NoError(t, err)
		for _, k := range []string{"buyers", "resv", "pending", "idem", "orders", "items", "ticket:n0nce"} {
			got, err := e.Redis.ClusterKeySlot(ctx, base+k).Result()
			require.NoError(t, err)
			require.Equal(t, want, got, "%s%s", base, k)
		}
	}
}

// The rate limiter's script takes one key per call: it works on a
// cluster, and its budget is shared by every client of the cluster.
// Concurrent calls share a pipeline (spanning the cluster's nodes) and
// each key keeps its own budget: a burst of one key's calls gets that
// budget and no more, whatever batches they went in.
func TestLimiter(t *testing.T) { testenv.OnTopologies(t, testLimiter) }

func testLimiter(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	ctx := context.Background()
	l := redis.NewLimiter(e.Redis, e.Prefix)
	other := redis.NewClient(&goredis.UniversalOptions{Addrs: redis.ParseAddrs(e.RedisAddr)})
	t.Cleanup(func() { other.Close() })
	l2 := redis.NewLimiter(other, e.Prefix)
	l2.Coalesce = false
	for _, key := range []string{"user:1", "user:2", "ip:10.0.0.1"} {
		for i := 0; i < 3; i++ {
			lim := l
			if i%2 == 1 {
				lim = l2
			}
			ok, _, err := lim.Allow(ctx, key, 3)
			require.NoError(t, err)
			require.True(t, ok, "%s request %d of 3", key, i+1)
		}
		ok, retry, err := l2.Allow(ctx, key, 3)
		require.NoError(t, err)
		require.False(t, ok, "%s: the fourth in a second, from another client", key)
		require.Positive(t, retry)
	}

	// 200 keys (spread over the cluster's slots), 10 calls each at once,
	// 4 a second allowed: exactly 4 of each key's pass, plus what the
	// elapsed time refills.
	const keys, calls, rate = 200, 10, 4
	var allowed [keys]atomic.Int32
	var wg sync.WaitGroup
	start := time.Now()
	for k := range keys {
		for range calls {
			wg.Go(func() {
				ok, retry, err := l.Allow(ctx, fmt.Sprintf("burst:%d", k), rate)
				if assert.NoError(t, err) && ok {
					allowed[k].Add(1)
				} else if err == nil {
					assert.Positive(t, retry)
				}
			})
		}
	}
	wg.Wait()
	refill := int32(time.Since(start).Seconds() * rate)
	for k := range keys {
		require.GreaterOrEqual(t, allowed[k].Load(), int32(rate), "key %d", k)
		require.LessOrEqual(t, allowed[k].Load(), rate+refill, "key %d", k)
	}

	// A caller that gave up is refused, never let through.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	ok, _, err := l.Allow(gone, "user:gone", rate)
	require.Error(t, err)
	require.False(t, ok)

	// Redis lost its scripts (a restart, a promoted replica): the calls
	// that met NOSCRIPT did not run, and run with the script's source.
	require.NoError(t, e.Redis.ScriptFlush(ctx).Err())
	ok, _, err = l.Allow(ctx, "user:after-flush", 1)
	require.NoError(t, err)
	require.True(t, ok)
	ok, _, err = l.Allow(ctx, "user:after-flush", 1)
	require.NoError(t, err)
	require.False(t, ok, "the first call ran once: its token is taken")
}

// Unsettled pages through a session's reservations with HSCAN (one key:
// one node) and narrows them with the cached views.
func TestUnsettled(t *testing.T) { testenv.OnTopologies(t, testUnsettled) }

func testUnsettled(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 1000, 1)
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	for u := int64(1); u <= 600; u++ {
		_, _, err := e.Gate.Admit(ctx, sess, u, 1, fmt.Sprintf("%d-u%d", sess.ID, u), "t", old)
		require.NoError(t, err)
	}
	got, err := e.Gate.Unsettled(ctx, sess.ID, time.Now().Add(-time.Minute), 1000)
	require.NoError(t, err)
	require.Len(t, got, 600, "every old reservation, across HSCAN pages")
}

// DeletePrefix removes every key under a prefix, on every master of a
// cluster, and nothing else.
func TestDeletePrefix(t *testing.T) { testenv.OnTopologies(t, testDeletePrefix) }

func testDeletePrefix(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: server})
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		require.NoError(t, e.Redis.Set(ctx, fmt.Sprintf("%s:{s%d}:stock", e.Prefix, i), i, 0).Err())
	}
	keep := e.Prefix + "-not-under:{x}"
	require.NoError(t, e.Redis.Set(ctx, keep, 1, time.Minute).Err())
	require.NoError(t, redis.DeletePrefix(ctx, e.Redis, e.Prefix))
	for i := 0; i < 50; i++ {
		n, err := e.Redis.Exists(ctx, fmt.Sprintf("%s:{s%d}:stock", e.Prefix, i)).Result()
		require.NoError(t, err)
		require.Zero(t, n)
	}
	n, err := e.Redis.Exists(ctx, keep).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.NoError(t, e.Redis.Del(ctx, keep).Err())
}

// What a failover can lose, shown on purpose: the master acknowledges an
// admission its replica never received (the replication link was cut just
// before), then dies. The promoted replica has none of that admission,
// and all of what came before: the script's effects replicate as one
// transaction. Redis stays consistent with itself (stock + reservations =
// total, marks match), one unit high; the admission's idempotency record
// is gone, so a re-run decides again. The order itself survives in the
// API's hands and MySQL (see docs/ARCHITECTURE.md, "Redis Cluster").
func TestFailoverLosesAnUnreplicatedAdmission(t *testing.T) {
	rc := testenv.StartRedisCluster(t)
	e, sess := gateEnvOn(t, rc.Addr(), 3, 1)
	e.Gate.Coalesce = false
	ctx := context.Background()
	_, _, err := e.Gate.Admit(ctx, sess, 1, 1, "1-kept", "t", time.Now())
	require.NoError(t, err)

	cluster := e.Redis.(*goredis.ClusterClient)
	base := fmt.Sprintf("%s:{s%d}:", e.Prefix, sess.ID)
	master, err := cluster.MasterForKey(ctx, base+"stock")
	require.NoError(t, err)
	// The admission before is on the replica (WAIT: acknowledged by one).
	n, err := master.Wait(ctx, 1, 5*time.Second).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	// Freeze the replica, so that it can neither read what is still on
	// its link nor reconnect (it retries once a second: cutting the link
	// alone let it reconnect in time now and then); cut the link, admit,
	// kill the master, and thaw the replica, well within the node timeout.
	replicas := rc.Replicas(ctx, master.Options().Addr)
	require.NotEmpty(t, replicas)
	for _, r := range replicas {
		require.NoError(t, rc.Freeze(r))
	}
	require.NoError(t, master.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err())
	_, left, err := e.Gate.Admit(ctx, sess, 2, 1, "1-lost", "t", time.Now())
	require.NoError(t, err, "the master acknowledged it")
	require.Equal(t, 1, left)
	require.NoError(t, rc.Kill(master.Options().Addr))
	for _, r := range replicas {
		require.NoError(t, rc.Thaw(r))
	}

	e.Eventually(15*time.Second, "the replica is promoted", func() error {
		cluster.ReloadState(ctx)
		_, _, err := e.Gate.Stock(ctx, sess.ID)
		return err
	})
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 2, stock, "the acknowledged admission is gone, the one before it kept")
	_, err = e.Gate.Reservation(ctx, "1-lost")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	_, err = e.Gate.Reservation(ctx, "1-kept")
	require.NoError(t, err)
	snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 3, snap.Stock+len(snap.Reservations), "consistent with itself: stock + reserved = total")
	require.Zero(t, snap.MarkMismatches)
	// Releasing the lost one gives nothing back (Redis never held it);
	// re-running it decides again, and the unit sells once more.
	released, err := e.Gate.Release(ctx, sess.ID, "1-lost")
	require.NoError(t, err)
	require.Zero(t, released)
	_, left, err = e.Gate.Admit(ctx, sess, 2, 1, "1-lost", "t", time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, left)
}

// go-redis's cluster client sends a command again after a read timeout,
// whatever MaxRetries says; NewClient's node hook stops it. The reply to
// one INCR is swallowed on its connection (the command ran; the client
// waits out its read timeout), while new connections work: without the
// hook, go-redis runs the INCR again on one of them.
func TestClusterClientNeverResendsALostReply(t *testing.T) {
	rc := testenv.SharedRedisCluster(t)
	ctx := context.Background()
	key := fmt.Sprintf("test-resend-%d:{x}:n", time.Now().UnixNano())
	var swallow atomic.Bool
	var d net.Dialer
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: rc.Addrs, ReadTimeout: 100 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &swallowConn{Conn: c, swallow: &swallow}, nil
		}})
	t.Cleanup(func() { rdb.Close() })
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	require.ErrorIs(t, rdb.Get(ctx, key).Err(), goredis.Nil)

	swallow.Store(true)
	require.Error(t, rdb.Incr(ctx, key).Err(), "the reply is lost")
	n, err := rdb.Get(ctx, key).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n, "sent once")
}

// swallowConn, once swallow is set, drops the reply to the next INCR
// written on it: reads then block until the client's deadline.
type swallowConn struct {
	net.Conn
	swallow *atomic.Bool
	pending bool
}

func (c *swallowConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("incr")) && c.swallow.CompareAndSwap(true, false) {
		c.pending = true
	}
	return c.Conn.Write(b)
}

func (c *swallowConn) Read(b []byte) (int, error) {
	if c.pending {
		c.pending = false
		if _, err := c.Conn.Read(b); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(b)
}
