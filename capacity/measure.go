package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/temporal"
)

// Config is one measurement: its size and the servers it counts on.
type Config struct {
	// Orders per path (paid, cancelled, timed out).
	Orders int
	// PayTimeout must outlast the admission, creation, payment and cancel
	// phases: the third path's orders time out after them.
	PayTimeout time.Duration
	// MySQLDSN is a root DSN of the MariaDB server (its database is
	// ignored): the measurement turns the global userstat on and creates
	// a user and a database of its own.
	MySQLDSN string
	// TemporalAddr is a Temporal server with seckill's search attributes;
	// TemporalMetrics its Prometheus /metrics URL ("": no persistence
	// counts) and TemporalPID its process (0: not its CPU). Nothing else
	// may use it while the counts are read.
	TemporalAddr    string
	TemporalMetrics string
	TemporalPID     int
	// Commit names the code measured in the report.
	Commit string
	// Log receives the phases as they pass and the stack's warnings (nil:
	// nothing).
	Log io.Writer
}

// Run sells a small sale on servers of its own and measures what each
// admission and each order path costs them: the API and the worker run in
// this process, the counters of a redis-server it starts, of a MariaDB
// user it creates and of the Temporal server it is given are read before
// and after each phase. It fails if the sale's invariants do not hold.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	n := cfg.Orders
	if n <= 0 || cfg.PayTimeout <= 0 {
		return nil, errors.New("capacity: the orders per path and the pay timeout must be positive")
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "capacity: "+format+"\n", args...)
		}
	}
	s, err := newStack(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()

	// What the API and the worker send, next to what Redis runs.
	sent := NewRedisClient()
	s.app.Redis.AddHook(sent)
	probe := NewRedisProbe(s.redisAddr)
	defer probe.C.Close()
	m := &Meter{Sources: []Source{probe, sent, &MySQL{DB: s.root, User: s.user}}}
	if cfg.TemporalMetrics != "" {
		m.Sources = append(m.Sources, &Temporal{URL: cfg.TemporalMetrics})
	}
	// CPU: this process is the API, the worker and the shoppers' client.
	m.Sources = append(m.Sources, &Process{Label: "seckill", PID: os.Getpid()})
	if cfg.TemporalPID != 0 {
		m.Sources = append(m.Sources, &Process{Label: "temporal", PID: cfg.TemporalPID})
	}
	ph := &phases{m: m, rep: &Report{Date: time.Now().UTC().Format(time.RFC3339), Commit: cfg.Commit,
		OrdersPerPath: n, PayTimeout: cfg.PayTimeout.String(), Histories: map[string]HistoryCost{}}, logf: logf}

	// Back-to-back readings count nothing: the probes leave themselves
	// out (but for CPU time, which they do take). Not checked on Temporal:
	// its probe reads metrics over HTTP, which touch no persistence, and
	// the server's own housekeeping (cluster metadata, task queues) runs
	// at any moment.
	r0, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	r1, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	for server, c := range r1.By {
		if server == "temporal" {
			continue
		}
		for k, v := range c.Sub(r0.By[server]) {
			if k != "cpu_us" && k != "busy_us" && v != 0 {
				return nil, fmt.Errorf("%s %s moved between two readings with nothing in between", server, k)
			}
		}
	}

	// One session, 3n winners and a unit left over, so it never sells out:
	// winners and limit losers both meet the admission script. Another,
	// of one unit, whose sold-out flag the API sets when it sells it.
	sess, err := s.session(ctx, 3*n+1)
	if err != nil {
		return nil, err
	}
	empty, err := s.session(ctx, 1)
	if err != nil {
		return nil, err
	}
	shoppers, err := s.shoppers(1, 3*n)
	if err != nil {
		return nil, err
	}
	// Ten times as many: they cost so little CPU that fewer do not add up
	// to enough clock ticks.
	late, err := s.shoppers(1_000_000, 10*n)
	if err != nil {
		return nil, err
	}
	lastBuyer, err := s.shopper(999_999)
	if err != nil {
		return nil, err
	}
	last, err := lastBuyer.Buy(ctx, empty.ID, client.BuyOptions{})
	if err != nil {
		return nil, err
	}
	// Its start (and the connections it opens) must not count as idle
	// traffic.
	if err := s.startsDone(cfg.PayTimeout); err != nil {
		return nil, err
	}
	settle()
	idleAPI, err := ph.idle(ctx)
	if err != nil {
		return nil, err
	}

	// Admissions of the paid and cancelled orders' shoppers one at a time
	// (exact counts: the gate coalesces concurrent admissions into one
	// script call), then of the timed-out orders' 32 at a time, as in a
	// burst. No worker runs: the phases hold the admission and the
	// workflow start only.
	orders := make([]string, 3*n)
	err = ph.measure(ctx, "admission_winner", 2*n, idleAPI, func() error {
		for i, sh := range shoppers[:2*n] {
			acc, err := sh.Buy(ctx, sess.ID, client.BuyOptions{})
			if err != nil {
				return err
			}
			orders[i] = acc.OrderNo
		}
		// The starter starts the workflows after the answers.
		err := s.startsDone(cfg.PayTimeout)
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}
	err = ph.measure(ctx, "admission_winner_c32", n, idleAPI, func() error {
		err := concurrently(shoppers[2*n:], func(i int, sh *client.Client) error {
			acc, err := sh.Buy(ctx, sess.ID, client.BuyOptions{})
			if err == nil {
				orders[2*n+i] = acc.OrderNo
			}
			return err
		})
		if err == nil {
			err = s.startsDone(cfg.PayTimeout)
		}
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}
	loser := func(i int, sh *client.Client) error {
		if _, err := sh.Buy(ctx, sess.ID, client.BuyOptions{}); client.StatusCode(err) != 409 {
			return fmt.Errorf("shopper %d's unit beyond the limit of 1: want 409, got %v", i+1, err)
		}
		return nil
	}
	err = ph.measure(ctx, "admission_loser_script", 3*n, idleAPI, func() error {
		for i, sh := range shoppers {
			if err := loser(i, sh); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The same losers again, 32 at a time, as in a burst: the gate
	// coalesces their admissions into fewer script calls (the per-user
	// limit's script still runs once each).
	err = ph.measure(ctx, "admission_loser_script_c32", 3*n, idleAPI, func() error {
		return concurrently(shoppers, loser)
	})
	if err != nil {
		return nil, err
	}
	err = ph.measure(ctx, "admission_loser_soldout_flag", len(late), idleAPI, func() error {
		for _, sh := range late {
			_, err := sh.Buy(ctx, empty.ID, client.BuyOptions{})
			var ce *client.Error
			if !errors.As(err, &ce) || ce.StatusCode != 409 || ce.Layer() != api.LayerSoldOutMemory {
				return fmt.Errorf("a loser after the sell-out: want 409 from the sold-out memory, got %v", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// The worker creates the 3n orders; their Temporal starts were
	// counted with the admissions.
	logf("create")
	before, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.startWorker(); err != nil {
		return nil, err
	}
	if err := s.waitStatus(ctx, append([]string{last.OrderNo}, orders...), seckill.StatusWaitPay, cfg.PayTimeout); err != nil {
		return nil, err
	}
	settle()
	created, err := m.Read(ctx)
	if err != nil {
		return nil, err
	}
	// The one-unit session's order goes (its shopper cancels it) before
	// the idle window.
	if _, err := lastBuyer.Cancel(ctx, last.OrderNo); err != nil {
		return nil, err
	}
	if err := s.waitStatus(ctx, []string{last.OrderNo}, seckill.StatusClosed, cfg.PayTimeout); err != nil {
		return nil, err
	}
	settle()
	idleAll, err := ph.idle(ctx)
	if err != nil {
		return nil, err
	}
	ph.rep.Phases = append(ph.rep.Phases, Measure("create", 3*n+1, before, created, idleAll))

	paid, cancelled, timedOut := orders[:n], orders[n:2*n], orders[2*n:]
	pay := s.client()
	err = ph.measure(ctx, "paid", n, idleAll, func() error {
		for _, no := range paid {
			if _, err := pay.Pay(ctx, seckill.Payment{EventID: "evt-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: 100}); err != nil {
				return fmt.Errorf("pay %s: %w", no, err)
			}
		}
		err := s.waitStatus(ctx, paid, seckill.StatusPaid, cfg.PayTimeout)
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}
	err = ph.measure(ctx, "cancel", n, idleAll, func() error {
		for i, no := range cancelled {
			if _, err := shoppers[n+i].Cancel(ctx, no); err != nil {
				return fmt.Errorf("cancel %s: %w", no, err)
			}
		}
		err := s.waitStatus(ctx, cancelled, seckill.StatusClosed, cfg.PayTimeout)
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}
	closed, err := s.countStatus(ctx, timedOut, seckill.StatusClosed)
	if err != nil {
		return nil, err
	}
	if closed != 0 {
		return nil, fmt.Errorf("%d orders timed out before their phase: raise the pay timeout (%s)", closed, cfg.PayTimeout)
	}
	err = ph.measure(ctx, "timeout", n, idleAll, func() error {
		err := s.waitStatus(ctx, timedOut, seckill.StatusClosed, 2*cfg.PayTimeout)
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}

	// The Temporal baseline of the bench's rate ratios (bench.Noops: one
	// local activity in the first task, which comes back on the eager
	// start, then done), counted like the orders: what a create or a close
	// costs the server beyond it (docs/BENCHMARKS.md, "What a close costs").
	// At least minNoops of them: the idle loops tick every one to five
	// seconds, and over ten units one tick more or less in the phase than
	// the idle rate predicts is a tenth of a command per unit.
	noops := max(n, minNoops)
	err = ph.measure(ctx, "temporal_noop", noops, idleAll, func() error {
		_, err := bench.Noops(ctx, s.app.Temporal, 8, noops, nil)
		settle()
		return err
	})
	if err != nil {
		return nil, err
	}

	// The hottest read after admission: a shopper polling an order (ten
	// polls per paid order, for enough clock ticks).
	err = ph.measure(ctx, "poll_order", 10*n, idleAll, func() error {
		for range 10 {
			for i, no := range paid {
				o, err := shoppers[i].Order(ctx, no)
				if err != nil {
					return err
				}
				if o.Status != seckill.StatusPaid {
					return fmt.Errorf("order %s is %s, paid before", no, o.Status)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	for path, nos := range map[string][]string{"paid": paid, "cancel": cancelled, "timeout": timedOut} {
		var cs []temporal.Cost
		for _, no := range nos {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			c, err := temporal.OrderCost(cctx, s.app.Temporal, no)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("the history of %s: %w", no, err)
			}
			cs = append(cs, c)
		}
		ph.rep.Histories[path] = MeanCost(cs)
	}
	for _, id := range []int64{sess.ID, empty.ID} {
		if err := s.checkInvariants(ctx, id); err != nil {
			return nil, err
		}
	}
	return ph.rep, nil
}

// phases reads the counters around each phase into the report.
type phases struct {
	m    *Meter
	rep  *Report
	logf func(string, ...any)
}

// minNoops is the fewest no-op workflows the temporal_noop phase runs.
const minNoops = 100

// idleWindow is how long the idle traffic is read for.
const idleWindow = 5 * time.Second

// idle is the servers' traffic per second while nothing is sold.
func (p *phases) idle(ctx context.Context) (map[string]Counts, error) {
	p.logf("idle window (%s)", idleWindow)
	r0, err := p.m.Read(ctx)
	if err != nil {
		return nil, err
	}
	time.Sleep(idleWindow)
	r1, err := p.m.Read(ctx)
	if err != nil {
		return nil, err
	}
	return Rate(r0, r1), nil
}

// measure runs one phase of units between two readings.
func (p *phases) measure(ctx context.Context, name string, units int, idle map[string]Counts, run func() error) error {
	p.logf("%s (%d)", name, units)
	before, err := p.m.Read(ctx)
	if err != nil {
		return err
	}
	if err := run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	after, err := p.m.Read(ctx)
	if err != nil {
		return err
	}
	p.rep.Phases = append(p.rep.Phases, Measure(name, units, before, after, idle))
	return nil
}

// settle lets the last steps of a phase (a start after its answer, a
// workflow's end after its last status, a release after a close) finish
// before its reading, and Temporal's metrics, which it reports once a
// second, catch up.
func settle() { time.Sleep(2 * time.Second) }

func (s *stack) shoppers(first int64, n int) ([]*client.Client, error) {
	out := make([]*client.Client, n)
	for i := range out {
		c, err := s.shopper(first + int64(i))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// concurrently runs f for every shopper, 32 at a time, and returns the
// first error.
func concurrently(shoppers []*client.Client, f func(i int, s *client.Client) error) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i, s := range shoppers {
		g.Go(func() error { return f(i, s) })
	}
	return g.Wait()
}
