package metrics_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/metrics"
)

// ObserveReports sets the sale series per session, sums the relay backlog
// over sessions, counts a pass with a broken invariant as drift, and drops
// the series of a session that is no longer reported.
func TestObserveReports(t *testing.T) {
	m := metrics.New()
	m.ObserveReports([]seckill.Report{
		{SessionID: 1, OK: true, DBStock: 3, RedisStock: 2, InFlight: 1, PendingStarts: 1, OldestPendingSeconds: 4,
			Orders: map[seckill.Status]int{seckill.StatusWaitPay: 5, seckill.StatusPaid: 2}},
		{SessionID: 2, OK: false, Drift: 1, Problems: []string{"db_stock + held != total"}, PendingStarts: 2, RefundsPending: 1, OldestPendingSeconds: 9},
	})
	require.Equal(t, 5.0, testutil.ToFloat64(m.Orders.WithLabelValues("1", "WAIT_PAY")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.Orders.WithLabelValues("1", "CLOSED")))
	require.Equal(t, 2.0, testutil.ToFloat64(m.Stock.WithLabelValues("1", "redis")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.Problems.WithLabelValues("2")))
	require.Equal(t, 3.0, testutil.ToFloat64(m.RelayBacklog.WithLabelValues("starts")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.RelayBacklog.WithLabelValues("refunds")))
	require.Equal(t, 9.0, testutil.ToFloat64(m.RelayOldest.WithLabelValues("starts")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.ReconcileRuns.WithLabelValues("drift")))

	m.ObserveReports([]seckill.Report{{SessionID: 1, OK: true, DBStock: 3, RedisStock: 3}})
	require.Equal(t, 1.0, testutil.ToFloat64(m.ReconcileRuns.WithLabelValues("ok")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.RelayBacklog.WithLabelValues("starts")))
	require.NoError(t, testutil.CollectAndCompare(m.Drift, strings.NewReader(`
# HELP seckill_reconcile_drift Units on which Redis and MySQL disagree for good (orders MySQL refused after Redis admitted them); should stay 0.
# TYPE seckill_reconcile_drift gauge
seckill_reconcile_drift{session_id="1"} 0
`)), "session 2 is gone from the series")
}

// WatchDependencies sets seckill_dependency_up from each ping, at once and
// then every interval: down while a ping fails or does not answer in time,
// up again when it answers.
func TestWatchDependencies(t *testing.T) {
	m := metrics.New()
	var redisDown atomic.Bool
	redisDown.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	go m.WatchDependencies(ctx, 50*time.Millisecond, map[string]func(context.Context) error{
		"mysql": func(context.Context) error { return nil },
		"redis": func(context.Context) error {
			return map[bool]error{true: errors.New("refused"), false: nil}[redisDown.Load()]
		},
		"temporal": slow,
	})
	up := func(dep string) float64 { return testutil.ToFloat64(m.DependencyUp.WithLabelValues(dep)) }
	require.Eventually(t, func() bool {
		return up("mysql") == 1 && up("redis") == 0 && up("temporal") == 0 && testutil.CollectAndCount(m.DependencyUp) == 3
	},
		5*time.Second, 10*time.Millisecond)
	redisDown.Store(false)
	require.Eventually(t, func() bool { return up("redis") == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 0.0, up("temporal"), "a ping that never answers is down")
}
