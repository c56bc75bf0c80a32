package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// TestMain stops the Redis Cluster the tests share.
func TestMain(m *testing.M) { testenv.Main(m) }

// A sale through the API with every Redis client on a Redis Cluster (3
// masters, 3 replicas) and the rate limits on (their buckets spread over
// the masters): exactly the stock is accepted, every order reaches
// WAIT_PAY, payments and a cancel go through, and the invariants hold.
func TestSaleOnRedisCluster(t *testing.T) {
	e := testenv.New(t, testenv.Options{RedisServer: testenv.SharedRedisCluster(t).Addr(), PayTimeout: time.Minute,
		Limits: app.Limits{Global: 10000, User: 50, IP: 10000, Read: 1000}})
	const stock, limit = 20, 2
	sess := e.Session(stock, limit, 700)

	wins, _ := sellOut(t, e, sess, 1, 40, 3) // 120 requests for 20 units
	for _, w := range wins {
		e.WaitStatus(w.token, w.orderNo, 30*time.Second, seckill.StatusWaitPay)
	}
	for i, w := range wins[:5] {
		res := e.Pay(w.orderNo, fmt.Sprintf("pay-%d", i), fmt.Sprintf("evt-%d", i), 700)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	}
	cancel := wins[5]
	_, err := e.Client().WithToken(cancel.token).Cancel(context.Background(), cancel.orderNo)
	require.NoError(t, err)
	for _, w := range wins[:5] {
		e.WaitStatus(w.token, w.orderNo, 30*time.Second, seckill.StatusPaid)
	}
	e.WaitStatus(cancel.token, cancel.orderNo, 30*time.Second, seckill.StatusClosed)
	waitReleased(e, sess.ID)
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, r.DBStock)
	require.Equal(t, 1, r.RedisStock)
	require.Equal(t, 5, r.Orders[seckill.StatusPaid])
	require.Equal(t, stock-6, r.Orders[seckill.StatusWaitPay])
}

// A master of the cluster, the one holding the session's slot, is killed
// (SIGKILL) in the middle of a sale. Its replica is promoted within about
// two node timeouts; meanwhile shoppers get 503 UNAVAILABLE and retry with
// their Idempotency-Key, as the API tells them to. Selling continues on
// the promoted replica, MySQL never sells a unit it does not have, and the
// invariants hold at the end.
//
// What replication may lose: Redis replicates asynchronously, so an
// admission the master acknowledged in the last moment before it died may
// not have reached the replica. The admission script's effects travel as
// one transaction, so the replica has all of that admission or none of it.
// If none, its shopper still has a 202 and the API its reservation (the
// workflow starts from it and creates the order in MySQL), but the
// promoted Redis counts that unit as unsold: it admits one shopper too
// many, whose order MySQL refuses (FAILED, counted as drift). The test
// detects each lost admission (its o:<order no> record is gone from the
// session's idem hash) and, if there is any, checks exactly that outcome:
// no oversell, one drifted unit per lost one, nothing else wrong.
//
// The scenario needs the slot's replica in sync when its master dies. On a
// loaded machine (CI, other packages' tests beside it, a 1 s node timeout)
// it once was not: the replica, promoted long after, had none of the
// sale. The test then says so and skips, and a failed run logs the nodes'
// last log lines.
func TestRedisClusterFailoverMidSale(t *testing.T) {
	rc := testenv.StartRedisCluster(t)
	e := testenv.New(t, testenv.Options{RedisServer: rc.Addr(), PayTimeout: 2 * time.Minute})
	const stock, limit, users = 60, 1, 150
	sess := e.Session(stock, limit, 300)
	ctx := context.Background()
	cluster := e.Redis.(*goredis.ClusterClient)
	stockKey := fmt.Sprintf("%s:{s%d}:stock", e.Prefix, sess.ID)
	master, err := cluster.MasterForKey(ctx, stockKey)
	require.NoError(t, err)
	victim := master.Options().Addr

	// Shoppers arrive one every 5 ms, each buying one unit with its own
	// Idempotency-Key and retrying a 503 with it; when 45 of the 60 units
	// are sold, the slot's master dies under them.
	const killAt = 45
	var mu sync.Mutex
	accepted := map[string]int64{} // order number → user
	codes := map[string]int{}
	var unavailable int
	trigger := make(chan struct{})
	shop := func(u int64) {
		shopper := e.Client().WithToken(e.Token(u))
		key := fmt.Sprintf("buy-%d", u)
		deadline := time.Now().Add(45 * time.Second)
		for {
			a, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1, IdempotencyKey: key})
			mu.Lock()
			switch {
			case err == nil:
				accepted[a.OrderNo] = u
				if len(accepted) == killAt {
					close(trigger)
				}
			case client.StatusCode(err) == http.StatusServiceUnavailable && time.Now().Before(deadline):
				unavailable++
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
				continue
			default:
				codes[fmt.Sprintf("%d %s", client.StatusCode(err), seckill.ErrorCode(err))]++
			}
			mu.Unlock()
			return
		}
	}
	// unsynced is why the failover could not keep the master's data, if
	// it could not: the scenario needs a replica in sync when the master
	// dies, which a loaded machine (a stalled fsync, a missed ping with a
	// 1 s node timeout) does not always give.
	var unsynced error
	kill := func() {
		// The slot's master now: a spurious failover on a loaded machine
		// may have moved it since the sale began.
		cluster.ReloadState(ctx)
		if m, err := cluster.MasterForKey(ctx, stockKey); err == nil {
			victim = m.Options().Addr
		}
		unsynced = rc.ReplicaInSync(ctx, victim, 10*time.Second)
		require.NoError(t, rc.Kill(victim))
		t.Logf("killed master %s with %d of %d units sold", victim, killAt, stock)
	}
	killedAt := 0
	var wg sync.WaitGroup
	for u := int64(1); u <= users; u++ {
		wg.Add(1)
		go func() { defer wg.Done(); shop(u) }()
		time.Sleep(5 * time.Millisecond)
		if killedAt == 0 {
			select {
			case <-trigger:
				killedAt = int(u)
				kill()
			default:
			}
		}
	}
	if killedAt == 0 {
		<-trigger
		kill()
	}
	killed := time.Now()
	wg.Wait()
	t.Logf("sale done %s after the last shopper arrived (the kill came with shopper %d); %d answers were 503 UNAVAILABLE (retried with the same key)",
		time.Since(killed).Round(time.Millisecond), killedAt, unavailable)

	if unsynced != nil {
		t.Skipf("the slot's replica was not in sync when its master was killed (%v): the machine could not stage this failover", unsynced)
	}

	// The replica took over the slot.
	cluster.ReloadState(ctx)
	e.Eventually(10*time.Second, "a promoted master serves the session's slot", func() error {
		m, err := cluster.MasterForKey(ctx, stockKey)
		if err != nil {
			return err
		}
		if a := m.Options().Addr; a == victim {
			return fmt.Errorf("still %s", a)
		}
		return nil
	})

	// Which acknowledged admissions did the promoted replica never get?
	idemKey := fmt.Sprintf("%s:{s%d}:idem", e.Prefix, sess.ID)
	var lost []string
	for no := range accepted {
		err := e.Redis.HGet(ctx, idemKey, "o:"+no).Err()
		if errors.Is(err, goredis.Nil) {
			lost = append(lost, no)
		} else {
			require.NoError(t, err)
		}
	}
	t.Logf("accepted %d orders for %d units; refusals %v; admissions lost by the failover: %d %v",
		len(accepted), stock, codes, len(lost), lost)
	require.Len(t, accepted, stock+len(lost), "Redis sold exactly its stock, plus once more each unit it forgot")

	// Every accepted order ends WAIT_PAY, or FAILED for a unit Redis sold twice.
	failed := 0
	for no, u := range accepted {
		if e.WaitStatus(e.Token(u), no, 60*time.Second, seckill.StatusWaitPay, seckill.StatusFailed) == seckill.StatusFailed {
			failed++
		}
	}
	e.Eventually(20*time.Second, "pending starts cleared", func() error {
		if n := e.Reconcile(sess.ID).PendingStarts; n != 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	r := e.Reconcile(sess.ID)
	require.Equal(t, 0, r.DBStock, "sold out in MySQL")
	require.Equal(t, stock, r.Orders[seckill.StatusWaitPay], "exactly the stock holds units: no oversell")
	require.Equal(t, len(lost), failed)
	if len(lost) == 0 {
		e.RequireInvariants(sess.ID)
		return
	}
	t.Logf("LOST ACKNOWLEDGED ADMISSIONS: %d (asynchronous replication); reconcile: %v", len(lost), r.Problems)
	require.Equal(t, len(lost), r.Drift, "each lost admission is one drifted unit, and nothing else")
	require.Len(t, r.Problems, 1, "drift is the only problem: %v", r.Problems)
	require.Zero(t, r.InFlight)
}
