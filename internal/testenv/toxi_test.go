package testenv_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
)

// The toxics do to a real Redis what the drills rely on: latency above the
// read timeout times out, a stalled service never answers, a reset fails
// the command, a service taken down refuses and comes back on the same
// address.
func TestToxiFaults(t *testing.T) {
	testenv.SkipShort(t, "Redis on 127.0.0.1:6379")
	x := testenv.StartToxi(t, "redis-"+t.Name(), "127.0.0.1:6379")
	rdb := goredis.NewClient(&goredis.Options{Addr: x.Addr, ReadTimeout: 200 * time.Millisecond, MaxRetries: -1, PoolSize: 2})
	defer rdb.Close()
	ctx := context.Background()
	require.NoError(t, rdb.Ping(ctx).Err(), "Redis through the proxy (start it with redis-server)")

	undo := x.Latency(400*time.Millisecond, 0)
	err := rdb.Ping(ctx).Err()
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "latency above the read timeout must time out, got %v", err)
	undo()
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 3*time.Second, 50*time.Millisecond)

	undo = x.Stall()
	require.Error(t, rdb.Ping(ctx).Err())
	undo()

	undo = x.ResetPeer(0)
	require.Error(t, rdb.Ping(ctx).Err(), "a reset connection must fail the command")
	undo()
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 3*time.Second, 50*time.Millisecond)

	x.SetDown(true)
	require.Error(t, rdb.Ping(ctx).Err())
	x.SetDown(false)
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 3*time.Second, 50*time.Millisecond)
}
