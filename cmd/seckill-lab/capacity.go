package main

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/capacity"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/cli"
)

func capacityCmd() *cobra.Command {
	var (
		cfg capacity.Config
		out string
	)
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Count what an admission and an order cost Redis, MySQL and Temporal, on servers nobody else uses",
		Long: `capacity sells a small sale (--orders orders per path: paid, cancelled,
timed out) with the API and the worker in this process, and reads the
servers' own counters around every phase: a redis-server it starts (on the
PATH), a MariaDB user and database it creates (SECKILL_MYSQL_DSN must be
root's: it turns the global userstat on), and the Temporal server at
SECKILL_TEMPORAL_ADDR, which nothing else may use meanwhile (with
--temporal-metrics its persistence requests, with --temporal-pid its CPU).
It prints the report as Markdown tables and, with --out, writes
<out>.json and <out>.md. docs/CAPACITY.md sizes a sale from it;
scripts/capacity.sh starts a Temporal server of its own and runs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			if cfg.Orders <= 0 || cfg.PayTimeout <= 0 {
				return errors.New("--orders and --pay-timeout must be positive")
			}
			cfg.MySQLDSN, cfg.TemporalAddr, cfg.Log = c.MySQLDSN, c.TemporalAddr, os.Stderr
			rep, err := capacity.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			var md strings.Builder
			rep.Markdown(&md)
			if _, err := os.Stdout.WriteString(md.String()); err != nil {
				return err
			}
			if out == "" {
				return nil
			}
			if err := cli.SaveJSON(out+".json", rep); err != nil {
				return err
			}
			return os.WriteFile(out+".md", []byte(md.String()), 0o644)
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Orders, "orders", 100, "orders per path (paid, cancelled, timed out)")
	f.DurationVar(&cfg.PayTimeout, "pay-timeout", 30*time.Second, "the sale's pay timeout: must outlast the phases before the timeouts (more orders need a longer one)")
	f.StringVar(&cfg.TemporalMetrics, "temporal-metrics", "", "the Temporal server's Prometheus /metrics URL, for its persistence requests (empty: not counted)")
	f.IntVar(&cfg.TemporalPID, "temporal-pid", 0, "the Temporal server's process, for its CPU time (0: not measured)")
	f.StringVar(&cfg.Commit, "commit", "", "the commit measured, for the report")
	f.StringVar(&out, "out", "", "write the report to <out>.json and <out>.md")
	return cmd
}
