package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/redis"
)

// Instrument times every command by name against the real Redis, counts
// failures but not missing keys, times pipelines, and reports the pool.
func TestInstrument(t *testing.T) {
	testenv.SkipShort(t, "Redis on 127.0.0.1:6379")
	ctx := context.Background()
	m := metrics.New()
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { rdb.Close() })
	redis.Instrument(rdb, m)
	key := "instrument-test:" + time.Now().Format(time.RFC3339Nano)
	t.Cleanup(func() { rdb.Del(ctx, key) })

	require.NoError(t, rdb.Set(ctx, key, "1", time.Minute).Err())
	require.ErrorIs(t, rdb.Get(ctx, key+":missing").Err(), goredis.Nil)
	incrTwice := func(p goredis.Pipeliner) error {
		p.Incr(ctx, key)
		p.Incr(ctx, key)
		return nil
	}
	// The first pipeline may open a connection of its own, whose handshake
	// is a pipeline too; the second is timed alone.
	_, err := rdb.Pipelined(ctx, incrTwice)
	require.NoError(t, err)
	pipelinesBefore := samples(t, m, "pipeline")
	_, err = rdb.Pipelined(ctx, incrTwice)
	require.NoError(t, err)
	require.Error(t, rdb.Do(ctx, "NOSUCHCOMMAND").Err())

	// Each call is timed once, under its own name; a pipeline once as a whole.
	for cmd, want := range map[string]uint64{"set": 1, "get": 1, "incr": 0, "nosuchcommand": 1} {
		require.Equal(t, want, samples(t, m, cmd), "samples of %s", cmd)
	}
	require.Equal(t, pipelinesBefore+1, samples(t, m, "pipeline"))
	require.Equal(t, 0.0, testutil.ToFloat64(m.RedisErrors.WithLabelValues("get")), "a missing key is an answer")
	require.Equal(t, 1.0, testutil.ToFloat64(m.RedisErrors.WithLabelValues("nosuchcommand")))
	require.NoError(t, testutil.GatherAndCompare(m.Registry, strings.NewReader(`
# HELP seckill_redis_pool_timeouts_total Commands that gave up waiting for a free Redis connection.
# TYPE seckill_redis_pool_timeouts_total counter
seckill_redis_pool_timeouts_total 0
`), "seckill_redis_pool_timeouts_total"))
	total, err := m.Registry.Gather()
	require.NoError(t, err)
	var conns float64
	for _, f := range total {
		if f.GetName() == "seckill_redis_pool_connections" {
			for _, s := range f.GetMetric() {
				if s.GetLabel()[0].GetValue() == "total" {
					conns = s.GetGauge().GetValue()
				}
			}
		}
	}
	require.Positive(t, conns, "the pool holds the connection the commands used")
}

// samples is the number of observations of a command's latency histogram.
func samples(t *testing.T, m *metrics.Metrics, command string) uint64 {
	t.Helper()
	families, err := m.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "seckill_redis_command_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			if s.GetLabel()[0].GetValue() == command {
				return s.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}
