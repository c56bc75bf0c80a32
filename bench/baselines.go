package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	seckillapp "github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/temporal"
)

// BaselineConfig says where the baselines find Redis and Temporal: the same
// servers the stack uses.
type BaselineConfig struct {
	RedisAddr         string
	TemporalAddr      string
	TemporalNamespace string
	// Exec is this build's seckill binary: the bare-Fiber and admission-only
	// baselines run as `Exec bench baseline-server`, processes of their own.
	Exec string
	// NoopWorkflows is how many no-op workflows the Temporal baseline runs.
	NoopWorkflows int
	// MySQLDSN is the stack's database, for the admission-only baseline
	// (empty: that baseline and its ratios are skipped). Limits are the
	// stack's admission rate limits, which that baseline's API applies too.
	MySQLDSN string
	Limits   seckillapp.Limits
}

func measureBaselines(ctx context.Context, cfg BaselineConfig, pin *PinPlan, cpu *serverCPU, conc, n int, progress io.Writer) (*Baselines, error) {
	b := &Baselines{}
	var err error
	fmt.Fprintf(progress, "baseline: bare Fiber, %d requests at c=%d\n", n, conc)
	if b.FiberRPS, err = fiberBaseline(ctx, cfg, pin, conc, n); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "baseline: admission script alone, %d calls at c=%d\n", n, conc)
	if b.LuaPerSecond, _, err = luaBaseline(ctx, cfg.RedisAddr, conc, n); err != nil {
		return nil, err
	}
	noop, err := measureNoop(ctx, cfg, cpu, conc, progress)
	if err != nil {
		return nil, err
	}
	b.TemporalNoopPerSecond, b.TemporalNoopBefore = noop.perSecond, noop.perSecond
	b.TemporalNoopCPUMs, b.TemporalNoopShare = noop.cpuMs, noop.share
	fmt.Fprintf(progress, "baselines: Fiber %.0f req/s, Lua %.0f/s, Temporal no-op %.0f workflows/s\n",
		b.FiberRPS, b.LuaPerSecond, b.TemporalNoopPerSecond)
	return b, nil
}

// noopRun is one run of the Temporal no-op baseline: workflows/s and, when
// the server runs on this machine, its CPU per workflow and its share of
// the busy CPU (zero otherwise).
type noopRun struct{ perSecond, cpuMs, share float64 }

// measureNoop runs the Temporal no-op baseline once.
func measureNoop(ctx context.Context, cfg BaselineConfig, cpu *serverCPU, conc int, progress io.Writer) (noopRun, error) {
	k := cfg.NoopWorkflows
	if k <= 0 {
		k = 500
	}
	fmt.Fprintf(progress, "baseline: %d no-op workflows with one local activity\n", k)
	from := cpu.mark()
	var run noopRun
	var err error
	if run.perSecond, err = temporalBaseline(ctx, cfg, min(conc, 64), k); err != nil {
		return run, err
	}
	if p := cpu.phase(from); p.serverSeconds > 0 {
		run.cpuMs, run.share = p.msPer(k), p.share
	}
	return run, nil
}

// bracket adds the no-op baseline run after the steps to the one run
// before them: the baseline becomes their mean, the server's pace while
// the steps ran (it slows as it fills with the run's workflows, so a run
// before them alone overstates it, the more so the later the round).
func (b *Baselines) bracket(after noopRun) {
	b.TemporalNoopAfter = after.perSecond
	b.TemporalNoopPerSecond = (b.TemporalNoopBefore + after.perSecond) / 2
	if b.TemporalNoopCPUMs > 0 && after.cpuMs > 0 {
		b.TemporalNoopCPUMs = (b.TemporalNoopCPUMs + after.cpuMs) / 2
		b.TemporalNoopShare = (b.TemporalNoopShare + after.share) / 2
	}
}

// closedLoop runs f n times from conc goroutines and returns calls/s.
func closedLoop(conc, n int, f func(i int) error) (float64, error) {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// fiberBaseline: a bare Fiber handler answering the same JSON as a refused
// admission (a process of its own), loaded by the same client at the same
// concurrency.
func fiberBaseline(ctx context.Context, cfg BaselineConfig, pin *PinPlan, conc, n int) (float64, error) {
	srv, err := startBaselineServer(ctx, cfg.Exec, pin.frontPrefix(), ServerSpec{Kind: ServerFiber})
	if err != nil {
		return 0, err
	}
	defer srv.stop()
	c := newLoadClient("http://" + srv.addr)
	body := []byte(`{"quantity":1}`)
	return closedLoop(conc, n, func(int) error {
		code, _, _, err := c.do("POST", "/api/v1/sessions/1/orders", "Bearer x", body)
		if err == nil && code != fiber.StatusConflict {
			err = fmt.Errorf("bare fiber answered %d", code)
		}
		return err
	})
}

// luaBaseline: the admission script called directly through go-redis, one
// call per shopper, half of them winning, on a scratch key prefix. It
// returns calls/s and each call's latency in milliseconds.
func luaBaseline(ctx context.Context, addr string, conc, n int) (float64, []float64, error) {
	rdb := goredis.NewUniversalClient(&goredis.UniversalOptions{Addrs: redis.ParseAddrs(addr), PoolSize: conc})
	defer rdb.Close()
	prefix := "bench-baseline-" + strconv.Itoa(rand.IntN(1<<30))
	defer func() { _ = redis.DeletePrefix(context.Background(), rdb, prefix) }()
	g := redis.New(rdb, prefix)
	if err := g.Load(ctx); err != nil {
		return 0, nil, err
	}
	sess := &seckill.Session{ID: 1, PerUserLimit: 1}
	if _, err := g.Preheat(ctx, sess.ID, n/2); err != nil {
		return 0, nil, err
	}
	now := time.Now()
	lat := make([]float64, n)
	perSec, err := closedLoop(conc, n, func(i int) error {
		t0 := time.Now()
		_, _, err := g.Admit(ctx, sess, int64(i+1), 1, "1-b"+strconv.Itoa(i), "bench", now)
		lat[i] = float64(time.Since(t0).Microseconds()) / 1000
		if c := seckill.ErrorCode(err); c != "" && c != seckill.ESOLDOUT {
			return err
		}
		return nil
	})
	return perSec, lat, err
}

// noopWorkflow is the Temporal baseline: one local activity, nothing else.
func noopWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteLocalActivity(ctx, noopActivity).Get(ctx, nil)
}

func noopActivity(context.Context) error { return nil }

// temporalBaseline runs k no-op workflows (Noops) on a client of its own,
// connected as seckill's are (temporal.Dial), so that the baseline and
// the orders differ in their workflows, not in how they reach the server.
func temporalBaseline(ctx context.Context, cfg BaselineConfig, conc, k int) (float64, error) {
	opts := client.Options{HostPort: cfg.TemporalAddr, Namespace: cfg.TemporalNamespace}
	c, err := temporal.Dial(ctx, opts, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return Noops(ctx, c, conc, k, nil)
}

// Noops starts k no-op workflows, conc at a time, with eager start and a
// worker on c in this process, and returns how many completed per second,
// from the first completion to the last: the pace, without the first round
// trip's ramp (the order tier's rate is timed the same way,
// Step.CreationPerSecond). It is the Temporal baseline of the bench's rate
// ratios, and the capacity model counts what one costs the server. with,
// when not nil, adds to the i-th workflow's start options what the
// baseline leaves out (an order's search attributes, say), for what those
// cost the server.
func Noops(ctx context.Context, c client.Client, conc, k int, with func(i int, o *client.StartWorkflowOptions)) (float64, error) {
	queue := "bench-noop-" + strconv.Itoa(rand.IntN(1<<30))
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(noopWorkflow, workflow.RegisterOptions{Name: "BenchNoopWorkflow"})
	if err := w.Start(); err != nil {
		return 0, err
	}
	defer w.Stop()
	done := make([]time.Time, k)
	perSecond, err := closedLoop(conc, k, func(i int) error {
		opts := client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%d", queue, i), TaskQueue: queue, EnableEagerStart: true}
		if with != nil {
			with(i, &opts)
		}
		run, err := c.ExecuteWorkflow(ctx, opts, "BenchNoopWorkflow")
		if err != nil {
			return err
		}
		err = run.Get(ctx, nil)
		done[i] = time.Now()
		return err
	})
	if err != nil {
		return 0, err
	}
	first, last := slices.MinFunc(done, time.Time.Compare), slices.MaxFunc(done, time.Time.Compare)
	if span := last.Sub(first).Seconds(); k > 1 && span > 0 {
		return float64(k-1) / span, nil
	}
	return perSecond, nil
}
