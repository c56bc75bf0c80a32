package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/tracing"
)

func migrateCmd() *cobra.Command {
	var drop bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create the database if missing and apply the embedded migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			if drop {
				if err := mysql.DropDatabase(cmd.Context(), c.MySQLDSN); err != nil {
					return err
				}
				fmt.Println("database dropped")
				return nil
			}
			m, err := app.ConnectMySQL(cmd.Context(), c)
			if err != nil {
				return err
			}
			defer m.Close()
			if err := m.DB.Migrate(cmd.Context()); err != nil {
				return err
			}
			fmt.Println("migrations applied")
			return nil
		},
	}
	// For throwaway stacks (scripts/local-stack.sh), which migrate a
	// database of their own and drop it when done; hidden from the help.
	cmd.Flags().BoolVar(&drop, "drop", false, "drop the database SECKILL_MYSQL_DSN names instead (throwaway stacks only)")
	_ = cmd.Flags().MarkHidden("drop")
	return cmd
}

// withApp loads the configuration, checks the secrets, connects the
// adapters (Temporal too when withTemporal) and runs fn with them.
func withApp(ctx context.Context, secrets []string, withTemporal bool, fn func(m *app.Main) error) error {
	c, err := cli.LoadConfig(secrets...)
	if err != nil {
		return err
	}
	m, err := app.Connect(ctx, c, withTemporal)
	if err != nil {
		return err
	}
	defer m.Close()
	return fn(m)
}

func apiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "api",
		Short: "Serve the HTTP API on SECKILL_HTTP_ADDR",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The API opens checkouts (and with eager start hosts a worker,
			// refund steps included).
			if err := preflightProvider(); err != nil {
				return err
			}
			stop, err := startTracing(cmd.Context(), tracing.ServiceAPI)
			if err != nil {
				return err
			}
			defer stop()
			return withApp(cmd.Context(), cli.AllSecrets, true, func(m *app.Main) error {
				return m.RunAPI(cmd.Context())
			})
		},
	}
}

func workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker of the order workflow and the reservation relay",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The worker applies and refunds payments.
			if err := preflightProvider(); err != nil {
				return err
			}
			if err := preflightDrawKey(); err != nil {
				return err
			}
			stop, err := startTracing(cmd.Context(), tracing.ServiceWorker)
			if err != nil {
				return err
			}
			defer stop()
			return withApp(cmd.Context(), cli.AllSecrets, true, func(m *app.Main) error {
				if err := serveWorkerHTTP(cmd.Context(), m.Config.WorkerHTTPAddr, m); err != nil {
					return err
				}
				return m.RunWorker(cmd.Context())
			})
		},
	}
}

// preflightProvider refuses to start a process that opens, applies or
// refunds payments without an explicit payment provider, before it
// connects to anything: the message must not hide behind a connection
// error or a missing secret.
func preflightProvider() error {
	c, err := app.LoadConfig()
	if err != nil {
		return err
	}
	return c.RequireProvider()
}

func devCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run migrations, API, worker and a demo session in one process (needs the Temporal dev server: make dev)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			// dev is the sandbox's home: its shop pays through it.
			c.PaymentProvider = app.SandboxProvider
			c.DrainDelay = 0 // no balancer to leave: Ctrl-C stops at once
			for _, s := range []*string{&c.JWTSecret, &c.WebhookSecret, &c.AdminToken} {
				if *s == "" {
					*s = randomHex(16)
				}
			}
			if c.DrawKey == "" { // the worker's own, for this run's draws
				c.DrawKey = randomHex(32)
			}
			ctx := cmd.Context()
			stop, err := startTracing(ctx, tracing.ServiceDev)
			if err != nil {
				return err
			}
			defer stop()
			m, err := app.Connect(ctx, c, true)
			if err != nil {
				return err
			}
			defer m.Close()
			if err := m.DB.Migrate(ctx); err != nil {
				return err
			}
			ops, err := devOperators(ctx, m.DB)
			if err != nil {
				return err
			}
			sess, err := demoSession(ctx, m)
			if err != nil {
				return err
			}
			srv, err := m.APIServer(true)
			if err != nil {
				return err
			}
			token, err := auth.IssueToken(c.SigningJWTSecret(), 1, 24*time.Hour, time.Now())
			if err != nil {
				return err
			}
			printDevBanner(c, sess, token, ops)
			return m.RunDev(ctx, srv)
		},
	}
}

// demoSession creates and preheats a session that is on sale for an hour,
// priced in the deployment's currency as an operator's sale is: its
// orders, their export and their events carry it.
func demoSession(ctx context.Context, m *app.Main) (*seckill.Session, error) {
	now := time.Now().UTC().Truncate(time.Second)
	s := &seckill.Session{SKUID: 1001, Title: "Demo flash sale", PriceCents: 1999, Currency: m.Config.Currency,
		TotalStock: 100, PerUserLimit: 2, StartAt: now, EndAt: now.Add(time.Hour)}
	if err := m.DB.CreateSession(ctx, s, nil); err != nil {
		return nil, err
	}
	if _, err := m.Gate.Preheat(ctx, s.ID, s.TotalStock); err != nil {
		return nil, err
	}
	return s, nil
}

// devOperators gives each role an operator of its own, dev-<role>, with a
// fresh token (seckill.Roles' order), so the admin API can be tried as
// each. The tokens of an earlier run were only ever on its terminal:
// they are revoked, and a restart works.
func devOperators(ctx context.Context, db *mysql.DB) ([]string, error) {
	tokens := make([]string, len(seckill.Roles))
	for i, r := range seckill.Roles {
		tok, err := replaceOperator(ctx, db, "dev-"+string(r), r)
		if err != nil {
			return nil, err
		}
		tokens[i] = tok
	}
	return tokens, nil
}

func printDevBanner(c *app.Config, s *seckill.Session, token string, ops []string) {
	base := c.APIBase()
	fmt.Printf(`
seckill dev is up
  shop         %[1]s/   (this sale: %[1]s/?session=%[2]d; dev sign-in and sandbox payment are on)
  API          %[1]s   (session: %[1]s/api/v1/sessions/%[2]d)
  Temporal UI  http://127.0.0.1:8233/namespaces/%[3]s/workflows
  readiness    %[1]s/readyz
  metrics      %[1]s/metrics   (API, worker and Temporal SDK series: one process in dev)
  secrets      SECKILL_JWT_SECRET=%[4]s SECKILL_WEBHOOK_SECRET=%[5]s
  bootstrap    SECKILL_ADMIN_TOKEN=%[6]s   (the bootstrap admin, audited as "bootstrap": use the named tokens below)
  operator tokens (viewer / operator / admin): dev-viewer, dev-operator, dev-admin
               VIEWER=%[9]s
               OPERATOR=%[10]s
               ADMIN=%[11]s
  shopper 1    TOKEN=%[7]s

  buy:   curl -s -X POST -H "Authorization: Bearer $TOKEN" -d '{"quantity":1}' %[1]s/api/v1/sessions/%[2]d/orders
  poll:  curl -s -H "Authorization: Bearer $TOKEN" %[1]s/api/v1/orders/<order_no>
  admin: curl -s -H "Authorization: Bearer $VIEWER" %[1]s/admin/v1/sessions/%[2]d/reconcile
  pay timeout: %[8]s (SECKILL_PAY_TIMEOUT)

`, base, s.ID, c.TemporalNamespace, c.JWTSecret, c.WebhookSecret, c.AdminToken, token, c.PayTimeout, ops[0], ops[1], ops[2])
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func tokenCmd() *cobra.Command {
	var user int64
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token --user N [--ttl 1h]",
		Short: "Print a shopper JWT signed with SECKILL_JWT_SECRET",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.LoadConfig()
			if err != nil {
				return err
			}
			if err := c.RequireSecrets("SECKILL_JWT_SECRET"); err != nil {
				return err
			}
			if user <= 0 {
				return errors.New("--user must be a positive user id")
			}
			if ttl <= 0 {
				return errors.New("--ttl must be positive")
			}
			tok, err := auth.IssueToken(c.SigningJWTSecret(), user, ttl, time.Now())
			if err != nil {
				return err
			}
			fmt.Println(tok)
			return nil
		},
	}
	cmd.Flags().Int64Var(&user, "user", 0, "user id (the token's sub)")
	cmd.Flags().DurationVar(&ttl, "ttl", time.Hour, "lifetime of the token")
	_ = cmd.MarkFlagRequired("user")
	return cmd
}

func reconcileCmd() *cobra.Command {
	var session int64
	var repair bool
	cmd := &cobra.Command{
		Use:   "reconcile --session N [--repair]",
		Short: "Print the reconcile report of a session; exit 2 when ok is false (drift, stuck orders, Redis state missing, a broken invariant)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withApp(cmd.Context(), nil, false, func(m *app.Main) error {
				return printReconcile(cmd.Context(), m, session, repair)
			})
		},
	}
	cmd.Flags().Int64Var(&session, "session", 0, "session id")
	cmd.Flags().BoolVar(&repair, "repair", false, "correct Redis from MySQL when no reservation is in flight, and say what changed")
	_ = cmd.MarkFlagRequired("session")
	return cmd
}

// printReconcile prints a session's reconcile report (after a repair when
// asked) and turns a report that is not ok into exit status 2.
func printReconcile(ctx context.Context, m *app.Main, session int64, repair bool) error {
	var r *seckill.Report
	var out any
	var err error
	if repair {
		var rep *seckill.Repair
		if r, rep, err = seckill.RepairRedis(ctx, m.DB, m.Gate, session); err != nil {
			return err
		}
		out = struct {
			*seckill.Report
			Repair *seckill.Repair `json:"repair"`
		}{r, rep}
	} else {
		if r, err = m.Policy.Reconcile(ctx, m.DB, m.Gate, session); err != nil {
			return err
		}
		out = r
	}
	if err := cli.EncodeJSON(os.Stdout, out); err != nil {
		return err
	}
	if !r.OK {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("session %d: %d problems", session, len(r.Problems))}
	}
	return nil
}
