package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/cli"
)

func drillCmd() *cobra.Command {
	var (
		base       string
		stock      int
		users      int
		tries      int
		limit      int
		payRatio   float64
		settle     time.Duration
		killPID    int
		restartCmd string
		payTimeout time.Duration
		ramp       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "drill",
		Short: "Rehearse a sale against a running stack: burst, break something, pay, cancel, pay late, check the invariants",
		Long: `drill creates a session on the running API, bursts far more shoppers than
stock at it, optionally kills a process in the middle (--kill-pid, e.g. the
worker) and runs a command to bring it back (--restart-cmd), pays part of the
accepted orders through signed webhooks, cancels the rest, pays one cancelled
order late, and prints the result with the reconcile report. Each purchase
attempt carries its own Idempotency-Key; an undecided answer (503, a network
error) is retried with it until decided, and every answer is held against
the order rows in MySQL (SECKILL_MYSQL_DSN) and asked again after the sale.
Exit status 2 when an invariant is broken or an answer was wrong. It needs
the stack's SECKILL_JWT_SECRET, SECKILL_WEBHOOK_SECRET and
SECKILL_ADMIN_TOKEN, and the per-IP limits off (SECKILL_LIMIT_IP_RPS=0,
SECKILL_LIMIT_READ_RPS=0) on the API, since every shopper comes from here.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cli.LoadConfig(cli.AllSecrets...)
			if err != nil {
				return err
			}
			if stock <= 0 || users <= 0 || tries <= 0 || limit <= 0 || payRatio < 0 || payRatio > 1 {
				return errors.New("--stock, --users, --tries and --limit must be positive, --pay-ratio in [0,1]")
			}
			// MySQL is the referee: every answer the drill got is held
			// against the order rows.
			m, err := app.ConnectMySQL(cmd.Context(), c)
			if err != nil {
				return err
			}
			defer m.Close()
			db := m.DB
			cfg := drill.Config{
				BaseURL: base, AdminToken: c.AdminToken, JWTSecret: c.SigningJWTSecret(),
				WebhookSecret: c.SigningWebhookSecret(), Stock: stock, PerUserLimit: limit, Users: users,
				Tries: tries, PayRatio: payRatio, Settle: settle, IssueToken: auth.IssueToken, Progress: os.Stderr,
				PayTimeout: payTimeout, Ramp: ramp, Owners: db.OrderOwners,
			}
			if killPID > 0 {
				cfg.DuringBurst = func() {
					fmt.Fprintf(os.Stderr, "killing pid %d (SIGKILL)\n", killPID)
					if err := syscall.Kill(killPID, syscall.SIGKILL); err != nil {
						fmt.Fprintf(os.Stderr, "kill %d: %v\n", killPID, err)
					}
				}
			}
			if restartCmd != "" {
				cfg.AfterBurst = func() {
					fmt.Fprintf(os.Stderr, "restarting: %s\n", restartCmd)
					sh := exec.Command("sh", "-c", restartCmd)
					sh.Stdout, sh.Stderr = os.Stderr, os.Stderr
					if err := sh.Run(); err != nil {
						fmt.Fprintf(os.Stderr, "restart command: %v\n", err)
					}
				}
			}
			res, err := drill.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := cli.EncodeJSON(os.Stdout, res); err != nil {
				return err
			}
			if !res.OK {
				return &cli.ExitError{Code: 2, Err: fmt.Errorf("drill found %d problems", len(res.Problems))}
			}
			fmt.Fprintln(os.Stderr, "drill passed: every invariant holds")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&base, "api", "http://127.0.0.1:8080", "base URL of the running API")
	f.IntVar(&stock, "stock", 50, "units in the drill's session")
	f.IntVar(&users, "users", 200, "shoppers in the burst")
	f.IntVar(&tries, "tries", 2, "concurrent requests per shopper")
	f.IntVar(&limit, "limit", 1, "per-user limit of the session")
	f.Float64Var(&payRatio, "pay-ratio", 0.5, "share of accepted orders paid (the rest are cancelled)")
	f.DurationVar(&settle, "settle", 2*time.Minute, "how long to wait for each order to settle")
	f.DurationVar(&payTimeout, "pay-timeout", 0, "the stack's SECKILL_PAY_TIMEOUT when it is short (seconds): part of the unpaid orders are then left to time out")
	f.DurationVar(&ramp, "ramp", 0, "spread the burst's first requests over this long")
	f.IntVar(&killPID, "kill-pid", 0, "process to SIGKILL in the middle of the burst (e.g. the worker)")
	f.StringVar(&restartCmd, "restart-cmd", "", "shell command run after the burst (e.g. to start a new worker)")
	return cmd
}
