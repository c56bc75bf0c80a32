package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/bench"
)

func benchCmd() *cobra.Command {
	var (
		cfg       bench.Config
		steps     string
		baselines bool
		jsonPath  string
		htmlPath  string
		noopCount int
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
in the same run, a bare Fiber handler, the admission script alone and a
no-op Temporal workflow, and reports the ratios. It cancels --cost-sample
unpaid orders and reads the Temporal histories of that many orders of each
path (paid, timed out, cancelled) from SECKILL_TEMPORAL_ADDR to report the
billable actions and history events per order (temporal.actions_per_order
in the JSON; --cost-sample 0 skips it). The stack must run with
SECKILL_LIMIT_IP_RPS=0 and SECKILL_LIMIT_READ_RPS=0 (every shopper comes
from here); the bench needs its SECKILL_JWT_SECRET, SECKILL_WEBHOOK_SECRET
and SECKILL_ADMIN_TOKEN.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig()
			if err != nil {
				return err
			}
			if err := c.requireSecrets(allSecrets...); err != nil {
				return err
			}
			cfg.JWTSecret, cfg.WebhookSecret, cfg.AdminToken = []byte(c.JWTSecret), []byte(c.WebhookSecret), c.AdminToken
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
				cfg.Baselines = &bench.BaselineConfig{RedisAddr: c.RedisAddr, TemporalAddr: c.TemporalAddr,
					TemporalNamespace: c.TemporalNamespace, NoopWorkflows: noopCount}
			}
			cfg.TemporalAddr, cfg.TemporalNamespace = c.TemporalAddr, c.TemporalNamespace
			cfg.Progress = os.Stderr
			rep, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := bench.WriteTable(os.Stdout, rep); err != nil {
				return err
			}
			if jsonPath != "" {
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					return err
				}
				if err := os.WriteFile(jsonPath, b, 0o644); err != nil {
					return err
				}
			}
			if htmlPath != "" {
				f, err := os.Create(htmlPath)
				if err != nil {
					return err
				}
				if err := bench.WriteHTML(f, rep); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if !rep.InvariantsOK {
				return &exitError{code: 2, err: fmt.Errorf("invariants broken: %v", rep.Problems)}
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
	f.DurationVar(&cfg.Settle, "settle", time.Minute, "how long to wait for orders to settle")
	f.BoolVar(&baselines, "baselines", false, "measure bare Fiber, the admission script alone and a no-op Temporal workflow in the same run")
	f.IntVar(&noopCount, "noop-workflows", 500, "no-op workflows in the Temporal baseline")
	f.IntVar(&cfg.CostSample, "cost-sample", 3, "orders of each path (paid, timed out, cancelled: that many unpaid orders are cancelled) whose Temporal histories are read to count the actions per order (0 = do not count)")
	f.StringVar(&jsonPath, "json", "", "write the report as JSON to this file")
	f.StringVar(&htmlPath, "html", "", "write the report as HTML with charts to this file")
	return cmd
}
