package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/internal/testenv"
)

// With SECKILL_REDIS_MASTER the addresses are Sentinels: the gate keeps
// its contract on the master they name, and when that master dies the
// Sentinel promotes the replica and the client follows it: admissions go
// on, and the session's state (replicated before the kill) is whole.
func TestSentinelFailover(t *testing.T) {
	rs := testenv.StartRedisSentinel(t)
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, RedisServer: rs.Addr(), RedisMaster: rs.MasterName})
	storetest.TestGate(t, func(_ *testing.T, stock, limit int) (storetest.Gate, *seckill.Session) {
		return e.Gate, e.Session(stock, limit, 100)
	})

	ctx := context.Background()
	sess := e.Session(10, 1, 100)
	for u := int64(1); u <= 4; u++ {
		_, _, err := e.Gate.Admit(ctx, sess, u, 1, fmt.Sprintf("%d-s%d", sess.ID, u), "t", time.Now())
		require.NoError(t, err)
	}
	master, err := rs.Master(ctx)
	require.NoError(t, err)
	// The admissions are on the replica before the kill (WAIT: one
	// replica acknowledged them), so this failover loses nothing.
	n, err := e.Redis.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, rs.Kill(master))

	var left int
	e.Eventually(30*time.Second, "admission on the promoted replica", func() error {
		var err error
		_, left, err = e.Gate.Admit(ctx, sess, 5, 1, fmt.Sprintf("%d-s5", sess.ID), "t", time.Now())
		return err
	})
	require.Equal(t, 5, left)
	now, err := rs.Master(ctx)
	require.NoError(t, err)
	require.NotEqual(t, master, now, "the Sentinel named a new master")
	snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, snap.Reservations, 5)
	require.Equal(t, 5, snap.Stock)
	require.Zero(t, snap.MarkMismatches)
}
