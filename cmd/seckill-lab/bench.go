package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/bench/htmlreport"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/cli"
)

func benchCmd() *cobra.Command {
	var (
		cfg       bench.Config
		steps     string
		baselines bool
		jsonPath  string
		htmlPath  string
		noopCount int
		redisAOF  string
		pin       bool
		pinWorker string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a running stack like a flash sale and report the funnel, latency, throughput and invariants",
		Long: `bench sells a fresh session on a running stack (default: the local make dev
stack) at each load step: --users shoppers with their own JWTs send
--requests-per-user orders each, closed loop (--concurrency) or open loop
(--rate requests/s), then the same burst against the sold-out session (the
fast path). It follows every winner to WAIT_PAY, pays --pay-ratio of them
through signed webhooks, waits --pay-timeout for the rest to close, and
checks the invariants through the reconcile report. --baselines measures,
in the same run, a bare Fiber handler, the admission script alone, a
no-op Temporal workflow and the admission-only API (the last step's burst,
same shoppers, requests and load, through an API built from the same code
on SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR under a scratch key prefix,
with the order tier switched off: no workflow is started;
baselines.admission_only in the JSON); the bare Fiber handler and the
admission-only API run as processes of their own, like the API they stand
for, so that they do not share the load generator's Go runtime. It
reports the ratios against them with their targets: admission_vs_fiber ≥ 0.5,
soldout_vs_fiber ≥ 0.85, burst_vs_admission_only ≥ 0.8 (the burst's
requests/s within 1.25× of the admission-only API's),
accept_p50_vs_admission_only ≤ 1.3 and accept_p99_vs_admission_only ≤ 1.3
(winners' 202 latency against the admission-only API's: a winner's answer
must not wait for Temporal), orders_vs_temporal_noop ≥ 0.7 and
closes_vs_temporal_noop ≥ 0.6. It cancels --cost-sample
unpaid orders and reads the Temporal histories of that many orders of each
path (paid, timed out, cancelled) from SECKILL_TEMPORAL_ADDR to report the
billable actions and history events per order (temporal.actions_per_order
in the JSON; --cost-sample 0 skips it). --repeat N runs the baselines and
the steps N times, interleaved, and reports each ratio's median (ratios)
and spread, (max − min) / median (ratios_spread). --redis-aof
no,everysec,always also runs, each round, the admission script against a
private redis-server per persistence setting (free loopback port, temp
--dir; never the stack's Redis) and reports calls/s and p50/p99 per
setting (redis_aof). --pin pins the API and Redis to CPU 0 and Temporal,
MySQL and the --pin-worker processes to CPU 1 for the run (taskset -a -p,
found by the ports they listen on; every process is put back afterwards;
cpu_pinning in the JSON says which mode ran). The stack must run with
SECKILL_LIMIT_IP_RPS=0 and SECKILL_LIMIT_READ_RPS=0 (every shopper comes
from here); the bench needs its SECKILL_JWT_SECRET, SECKILL_WEBHOOK_SECRET
and SECKILL_ADMIN_TOKEN. --registrations N runs a reserved sale after the
rounds: N distinct shoppers register through the API in its window, then
at its start the burst buys at it, registrants and others mixed; the
registrations' rows and the Redis set are read from SECKILL_MYSQL_DSN and
SECKILL_REDIS_ADDR (reserved in the JSON). --draw N runs a draw sale of N
units after that: every shopper of the run registers, the sale's
workflow draws at its start, each shopper asks its registration once and
the winners buy (one in ten of the others tries to); it reports the draw's
time, the front door against the first-come burst and the order workflows
Temporal received (draw in the JSON).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.LoadConfig(cli.AllSecrets...)
			if err != nil {
				return err
			}
			cfg.JWTSecret, cfg.WebhookSecret, cfg.AdminToken = c.SigningJWTSecret(), c.SigningWebhookSecret(), c.AdminToken
			if cfg.Users <= 0 || cfg.PerUser <= 0 || cfg.Stock <= 0 || (cfg.Concurrency <= 0 && cfg.Rate <= 0) {
				return errors.New("--users, --requests-per-user, --stock and --concurrency (or --rate) must be positive")
			}
			if steps != "" {
				for _, f := range strings.Split(steps, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(f))
					if err != nil || n <= 0 {
						return fmt.Errorf("--steps: %q is not a positive number", f)
					}
					cfg.Steps = append(cfg.Steps, n)
				}
			}
			if baselines {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("--baselines: find this binary to run the baseline servers: %w", err)
				}
				cfg.Baselines = &bench.BaselineConfig{Exec: exe, RedisAddr: c.RedisAddr, TemporalAddr: c.TemporalAddr,
					TemporalNamespace: c.TemporalNamespace, NoopWorkflows: noopCount, MySQLDSN: c.MySQLDSN,
					Limits: app.Limits{Global: c.LimitGlobalRPS, User: c.LimitUserRPS, IP: c.LimitIPRPS, Read: c.LimitReadRPS}}
			}
			cfg.TemporalAddr, cfg.TemporalNamespace, cfg.TaskQueue = c.TemporalAddr, c.TemporalNamespace, c.TaskQueue
			if cfg.Registrations < 0 || cfg.RegistrationWindow < 0 || cfg.Draw < 0 || cfg.Items < 0 || cfg.Items > seckill.MaxItems {
				return fmt.Errorf("--registrations, --registration-window, --draw and --items must not be negative, --items at most %d", seckill.MaxItems)
			}
			cfg.Stores = &bench.Stores{MySQLDSN: c.MySQLDSN, RedisAddr: c.RedisAddr, RedisPrefix: c.RedisPrefix}
			if cfg.Repeat < 1 {
				return errors.New("--repeat must be at least 1")
			}
			if redisAOF != "" {
				if redisAOF == "all" {
					redisAOF = strings.Join(bench.AOFModes, ",")
				}
				for _, m := range strings.Split(redisAOF, ",") {
					m = strings.TrimSpace(m)
					if !slices.Contains(bench.AOFModes, m) {
						return fmt.Errorf("--redis-aof: %q is not one of no, everysec, always", m)
					}
					cfg.RedisAOF = append(cfg.RedisAOF, m)
				}
			}
			if pin {
				plan, err := pinPlan(cfg.BaseURL, c, pinWorker)
				if err != nil {
					return err
				}
				cfg.Pin = plan
			}
			cfg.Progress = os.Stderr
			rep, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := bench.WriteTable(os.Stdout, rep); err != nil {
				return err
			}
			if jsonPath != "" {
				if err := cli.SaveJSON(jsonPath, rep); err != nil {
					return err
				}
			}
			if htmlPath != "" {
				f, err := os.Create(htmlPath)
				if err != nil {
					return err
				}
				if err := htmlreport.WriteHTML(f, rep); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if !rep.InvariantsOK {
				return &cli.ExitError{Code: 2, Err: fmt.Errorf("invariants broken: %v", rep.Problems)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.BaseURL, "api", "http://127.0.0.1:8080", "base URL of the running API")
	f.IntVar(&cfg.Users, "users", 5000, "simulated shoppers, each with its own JWT")
	f.IntVar(&cfg.PerUser, "requests-per-user", 2, "orders each shopper sends")
	f.IntVar(&cfg.Concurrency, "concurrency", 256, "closed loop: requests in flight")
	f.IntVar(&cfg.Rate, "rate", 0, "open loop: requests per second (overrides --concurrency)")
	f.StringVar(&steps, "steps", "", "comma-separated load steps (concurrency, or rate with --rate), e.g. 100,200,500,1000,2000")
	f.IntVar(&cfg.Stock, "stock", 500, "units per bench session")
	f.IntVar(&cfg.Quantity, "quantity", 1, "units per order")
	f.IntVar(&cfg.Limit, "limit", 1, "per-user limit of the bench sessions")
	f.Float64Var(&cfg.PayRatio, "pay-ratio", 0.5, "share of accepted orders paid through signed webhooks")
	f.DurationVar(&cfg.PayTimeout, "pay-timeout", 0, "the stack's SECKILL_PAY_TIMEOUT: wait that long for unpaid orders to close (0 = do not wait)")
	f.BoolVar(&cfg.PayAfterCreation, "pay-after-creation", false, "pay only once every order reached WAIT_PAY (then all at once), so that the creation, the payments and the closes are each measured alone; default: a shopper pays as soon as the order shows WAIT_PAY")
	f.DurationVar(&cfg.Settle, "settle", time.Minute, "how long to wait for orders to settle; the wait for the orders' creation goes on as long as one is created within this")
	f.BoolVar(&baselines, "baselines", false, "measure bare Fiber, the admission script alone, a no-op Temporal workflow and the admission-only API (order tier off) in the same run")
	f.IntVar(&noopCount, "noop-workflows", 500, "no-op workflows in the Temporal baseline")
	f.IntVar(&cfg.CostSample, "cost-sample", 3, "orders of each path (paid, timed out, cancelled: that many unpaid orders are cancelled) whose Temporal histories are read to count the actions per order (0 = do not count)")
	f.IntVar(&cfg.Repeat, "repeat", 1, "rounds: the baselines and the steps run this many times, interleaved; ratios are medians, ratios_spread their (max − min) / median")
	f.BoolVar(&cfg.Risk, "risk", false, "with --baselines: run the admission-only burst a second time with the risk check on (a risk service in the bench that allows everyone) and report risk_vs_admission_only")
	f.BoolVar(&cfg.Tracing, "tracing", false, "with --baselines: run the admission-only burst twice more, traced (all requests sampled, then 1 %) to OTEL_EXPORTER_OTLP_ENDPOINT or to a sink in the bench, and report tracing_always_vs_admission_only and tracing_1pct_vs_admission_only")
	f.IntVar(&cfg.Items, "items", 0, "after the rounds, a first-come sale of this many items (sizes) with the same stock split over them, every request naming one in turn: reports its burst against the last one-item step's (items_vs_one_item) and checks the invariants per item (0 or 1 = none)")
	f.BoolVar(&cfg.Keys, "keys", true, "send every purchase with a fresh Idempotency-Key (a UUIDv7), as the shop page does, and measure the sold-out burst with and without keys; --keys=false: no keys")
	f.IntVar(&cfg.Captchas, "captchas", 0, "draw this many captchas at the end (one per shopper, at the run's concurrency) and report what the human check costs next to the sold-out answer")
	f.IntVar(&cfg.Registrations, "registrations", 0, "after the rounds, a reserved sale: this many distinct shoppers register through the API at the run's concurrency, then the run's shoppers (every other one registered) buy at its start; reports registrations/s beside the burst (registrations_vs_burst), NOT_ELIGIBLE answers, and the rows and Redis memory the registrations take (0 = no reserved sale)")
	f.DurationVar(&cfg.RegistrationWindow, "registration-window", 0, "with --registrations or --draw: the sale's registration window, from its creation to its start (0 = sized by a pilot of registrations on a sale of its own)")
	f.IntVar(&cfg.Draw, "draw", 0, "after the rounds, a draw sale of this many units: every shopper of the run registers through the API, the sale's workflow draws at its start, then each shopper asks its registration and the winners buy (one in ten of the others tries to); reports the draw's time, the front door against the first-come burst, NOT_ELIGIBLE answers and the order workflows Temporal received (0 = no draw sale)")
	f.BoolVar(&cfg.Warmup, "warmup", false, "run one unrecorded step first (at most 500 units, every winner paid), so the first round does not pay for a cold API")
	f.StringVar(&redisAOF, "redis-aof", "", "Redis persistence settings to compare on the admission script, each on a private redis-server: a list of no, everysec, always (or all)")
	f.BoolVar(&pin, "pin", false, "pin the API and Redis to CPU 0, Temporal, MySQL and --pin-worker to CPU 1 (taskset) for the run")
	f.StringVar(&pinWorker, "pin-worker", "", "with --pin: comma-separated PIDs of the worker processes (they listen on no port the bench knows)")
	f.StringVar(&jsonPath, "json", "", "write the report as JSON to this file")
	f.StringVar(&htmlPath, "html", "", "write the report as HTML with charts to this file")
	cmd.AddCommand(baselineServerCmd())
	return cmd
}

// baselineServerCmd is the process a bench runs each HTTP baseline in
// (bench.ServeBaseline): not for people, hence hidden.
func baselineServerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "baseline-server",
		Short:  "Serve one of the bench's HTTP baselines (started by seckill-lab bench --baselines)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.ServeBaseline(cmd.Context(), os.Stdin, os.Stdout)
		},
	}
}

// pinPlan finds the stack's processes by the ports they listen on: the API
// and Redis go on CPU 0, Temporal and MySQL (and the worker PIDs given) on
// CPU 1.
func pinPlan(apiURL string, c *app.Config, workers string) (*bench.PinPlan, error) {
	if err := bench.CheckPinning(); err != nil {
		return nil, err
	}
	plan := &bench.PinPlan{FrontCPU: "0", BackCPU: "1"}
	add := func(list *[]bench.PinnedProcess, role, addr string) error {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("--pin: %s address %q: %w", role, addr, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("--pin: %s port %q: %w", role, port, err)
		}
		pid, err := bench.ListeningPID(n)
		if err != nil {
			return fmt.Errorf("--pin: %s: %w", role, err)
		}
		*list = append(*list, bench.PinnedProcess{Role: role, PID: pid})
		return nil
	}
	u, err := url.Parse(apiURL)
	if err != nil {
		return nil, fmt.Errorf("--api: %w", err)
	}
	if err := add(&plan.Front, "api", u.Host); err != nil {
		return nil, err
	}
	for _, a := range strings.Split(c.RedisAddr, ",") {
		if err := add(&plan.Front, "redis", strings.TrimSpace(a)); err != nil {
			return nil, err
		}
	}
	if err := add(&plan.Back, "temporal", c.TemporalAddr); err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`@tcp\(([^)]+)\)`).FindStringSubmatch(c.MySQLDSN)
	if m == nil {
		return nil, errors.New("--pin: SECKILL_MYSQL_DSN has no tcp(host:port) address")
	}
	if err := add(&plan.Back, "mysql", m[1]); err != nil {
		return nil, err
	}
	for _, f := range strings.Split(workers, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("--pin-worker: %q is not a PID", f)
		}
		plan.Back = append(plan.Back, bench.PinnedProcess{Role: "worker", PID: pid})
	}
	return plan, nil
}
