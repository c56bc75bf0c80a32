package redis

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/metrics"
)

// Instrument records, in m, the latency and the errors of every command rdb
// sends (by command: the admission script, the rate limiter, order views,
// releases…) and the state of its connection pool at each scrape. A pool
// that runs out of connections during a sale shows as waits and timeouts
// here before it shows as 503s. Call it once per client and registry.
func Instrument(rdb goredis.UniversalClient, m *metrics.Metrics) {
	rdb.AddHook(&hook{m: m})
	stats := func(f func(*goredis.PoolStats) float64) func() float64 {
		return func() float64 { return f(rdb.PoolStats()) }
	}
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_redis_pool_connections", Help: "Connections in the Redis pool.", ConstLabels: prometheus.Labels{"state": "total"},
		}, stats(func(s *goredis.PoolStats) float64 { return float64(s.TotalConns) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_redis_pool_connections", Help: "Connections in the Redis pool.", ConstLabels: prometheus.Labels{"state": "idle"},
		}, stats(func(s *goredis.PoolStats) float64 { return float64(s.IdleConns) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "seckill_redis_pool_waits_total", Help: "Commands that waited for a free Redis connection.",
		}, stats(func(s *goredis.PoolStats) float64 { return float64(s.WaitCount) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "seckill_redis_pool_timeouts_total", Help: "Commands that gave up waiting for a free Redis connection.",
		}, stats(func(s *goredis.PoolStats) float64 { return float64(s.Timeouts) })),
	)
}

// hook times each command and pipeline. The metric children are cached by
// command name (a small, fixed set), so a call costs no label hashing.
type hook struct {
	m        *metrics.Metrics
	children sync.Map // command name → *child
}

type child struct {
	duration prometheus.Observer
	errors   prometheus.Counter
}

func (h *hook) child(name string) *child {
	if c, ok := h.children.Load(name); ok {
		return c.(*child)
	}
	c, _ := h.children.LoadOrStore(name, &child{
		duration: h.m.RedisCommands.WithLabelValues(name),
		errors:   h.m.RedisErrors.WithLabelValues(name),
	})
	return c.(*child)
}

func (h *hook) observe(name string, start time.Time, err error) {
	c := h.child(name)
	c.duration.Observe(time.Since(start).Seconds())
	// redis.Nil is an answer (no such key), not a failure.
	if err != nil && !errors.Is(err, goredis.Nil) {
		c.errors.Inc()
	}
}

func (h *hook) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *hook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.observe(cmd.Name(), start, err)
		return err
	}
}

func (h *hook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		h.observe("pipeline", start, err)
		return err
	}
}
