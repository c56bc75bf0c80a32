package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/spf13/cobra"

	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/chaos"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/cli"
)

func chaosCmd() *cobra.Command {
	var (
		duration    time.Duration
		seed        uint64
		seckillBin  string
		temporalBin string
		dir         string
		jsonOut     string
		stock       int
		users       int
		tries       int
		payTimeout  time.Duration
		settle      time.Duration
	)
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Randomized fault soak: sales back to back on a stack of its own while processes are killed and connections slowed, stalled, reset and cut",
		Long: `chaos starts a stack of its own on this machine: a file-backed Temporal dev
server (--temporal-bin), one API and one worker from the seckill binary
(--seckill-bin), each of their connections to Redis, MySQL and Temporal
through an in-process toxiproxy. It runs fault drills back to back against it for --duration while
a seeded random injector SIGKILLs and restarts the API, the worker and
Temporal, and adds latency above the client timeouts, stalls, connection
resets, a slow MySQL and links that go down, one fault at a time. Then it
heals everything, lets the last sale settle, reconciles every session and
prints a table: requests, faults injected by kind, orders, payments,
refunds, violations. Exit status 2 when there is any violation; the seed is
printed first, --seed replays the same faults.

It uses MySQL and Redis from SECKILL_MYSQL_DSN and SECKILL_REDIS_ADDR (both
must be on loopback): a database of its own (the DSN's name + _chaos_<time>)
and a Redis prefix and task queue of its own, with fresh secrets. A passing
soak drops its database and keys; a failing one keeps them, and the logs in
--dir, for the post-mortem.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			if duration <= 0 || stock <= 0 || users <= 0 || tries <= 0 || payTimeout <= 0 {
				return errors.New("--duration, --stock, --users, --tries and --pay-timeout must be positive")
			}
			if strings.Contains(c.RedisAddr, ",") {
				return errors.New("chaos needs one Redis address in SECKILL_REDIS_ADDR (no Cluster or Sentinel)")
			}
			if _, err := os.Stat(seckillBin); err != nil {
				return fmt.Errorf("%s: %w (build it with `make build`)", seckillBin, err)
			}
			if _, err := os.Stat(temporalBin); err != nil {
				return fmt.Errorf("%s: %w (build it with `make temporal`)", temporalBin, err)
			}
			ownDir := dir == ""
			if ownDir {
				if dir, err = chaos.DefaultDir(); err != nil {
					return err
				}
			}
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			stamp := strconv.FormatInt(time.Now().Unix(), 10)
			dsn, err := mysqldriver.ParseDSN(c.MySQLDSN)
			if err != nil {
				return err
			}
			dsn.DBName += "_chaos_" + stamp
			cfg := chaos.Config{
				Duration: duration, Seed: seed, Binary: seckillBin, TemporalBin: temporalBin, Dir: dir,
				MySQLDSN: dsn.FormatDSN(), RedisAddr: c.RedisAddr, RedisPrefix: "chaos-" + stamp, TaskQueue: "chaos-" + stamp,
				PayTimeout: payTimeout, IssueToken: auth.IssueToken, Progress: os.Stderr,
				Sale: drill.Config{Stock: stock, PerUserLimit: 1, Users: users, Tries: tries, PayRatio: 0.5,
					Ramp: 5 * time.Second, Settle: settle},
			}
			res, err := chaos.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			res.WriteTable(os.Stdout)
			if jsonOut != "" {
				if err := cli.SaveJSON(jsonOut, res); err != nil {
					return err
				}
			}
			if n := res.Violations(); n > 0 {
				fmt.Fprintf(os.Stderr, "kept for the post-mortem: database %s, Redis prefix %s, logs in %s\n", dsn.DBName, cfg.RedisPrefix, dir)
				return &cli.ExitError{Code: 2, Err: fmt.Errorf("chaos found %d violations (seed %d)", n, seed)}
			}
			if err := chaos.Cleanup(cmd.Context(), cfg, ownDir); err != nil {
				fmt.Fprintf(os.Stderr, "cleanup: %v\n", err)
			}
			fmt.Fprintln(os.Stderr, "chaos passed: every invariant holds")
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&duration, "duration", 2*time.Minute, "how long to start sales and inject faults (the last sale then settles)")
	f.Uint64Var(&seed, "seed", 0, "random seed of the fault injector (0: from the clock; printed either way)")
	f.StringVar(&seckillBin, "seckill-bin", filepath.Join("bin", "seckill"), "the seckill binary the soak's API and worker run from (make build builds it)")
	f.StringVar(&temporalBin, "temporal-bin", filepath.Join("bin", "temporal"), "the Temporal CLI binary (make temporal builds it)")
	f.StringVar(&dir, "dir", "", "directory for the processes' logs and the Temporal database (default: a new temporary one)")
	f.StringVar(&jsonOut, "json", "", "also write the result as JSON to this file")
	f.IntVar(&stock, "stock", 10, "units per sale")
	f.IntVar(&users, "users", 40, "shoppers per sale")
	f.IntVar(&tries, "tries", 2, "concurrent purchase attempts per shopper")
	f.DurationVar(&payTimeout, "pay-timeout", 5*time.Second, "the stack's SECKILL_PAY_TIMEOUT: short, so orders time out and compensate during the soak")
	f.DurationVar(&settle, "settle", 90*time.Second, "how long each wait of a sale may take")
	return cmd
}
