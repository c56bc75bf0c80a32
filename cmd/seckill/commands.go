package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sweep"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/temporal/starter"
	"github.com/seckill/seckill/worker"
)

func migrateCmd() *cobra.Command {
	var drop bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create the database if missing and apply the embedded migrations",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig()
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
			db, err := mysql.Open(cmd.Context(), c.MySQLDSN)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Migrate(cmd.Context()); err != nil {
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

// allSecrets are the secrets the long-running commands refuse to start without.
var allSecrets = []string{"SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN"}

// withDeps loads the configuration, checks the secrets, connects the
// adapters (Temporal too when withTemporal) and runs fn with them.
func withDeps(ctx context.Context, secrets []string, withTemporal bool, fn func(c *config, d *deps) error) error {
	c, err := loadConfig()
	if err != nil {
		return err
	}
	if err := c.requireSecrets(secrets...); err != nil {
		return err
	}
	d, err := c.connect(ctx, withTemporal)
	if err != nil {
		return err
	}
	defer d.close()
	return fn(c, d)
}

func apiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "api",
		Short: "Serve the HTTP API on SECKILL_HTTP_ADDR",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// With eager start the API hosts a worker, refund steps included.
			if err := preflightProvider(func(c *config) bool { return c.EagerStart }); err != nil {
				return err
			}
			return withDeps(cmd.Context(), allSecrets, true, func(c *config, d *deps) error {
				return runAPI(cmd.Context(), c, d)
			})
		},
	}
}

// runAPI serves the API (with an embedded worker for eager starts).
func runAPI(ctx context.Context, c *config, d *deps) error {
	servePprof(c.PprofAddr, d.log)
	if c.StartTimeout != 0 {
		d.log.Warn("SECKILL_START_TIMEOUT is deprecated and ignored: winners no longer wait for their workflow start (the API's starter starts it after the answer)")
	}
	if c.EagerStart {
		c.warnProvider(d.log)
	}
	srv, err := d.apiServer(c, false)
	if err != nil {
		return err
	}
	if c.EagerStart {
		// Eager start needs a worker on the same client: it takes the
		// first workflow task of each order this API starts (the
		// CreateOrder step); everything later goes to any worker.
		w := d.worker(c)
		if err := w.Start(); err != nil {
			return err
		}
		defer w.Stop()
	}
	return serveAPI(ctx, c, d, srv)
}

// serveAPI listens until ctx ends, then drains requests and background starts.
func serveAPI(ctx context.Context, c *config, d *deps, srv *api.Server) error {
	app := srv.App()
	srv.Start(ctx)
	errc := make(chan error, 1)
	go func() { errc <- app.Listen(c.HTTPAddr) }()
	d.log.Info("api listening", "addr", c.HTTPAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := app.ShutdownWithContext(sctx)
	srv.Shutdown(sctx)
	return err
}

func workerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "worker",
		Short: "Run the Temporal worker of the order workflow and the reservation relay",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The worker verifies no tokens, but refuses the same way as the API
			// so that a half-configured deployment fails at once, not at the first sale.
			if err := preflightProvider(func(*config) bool { return true }); err != nil {
				return err
			}
			return withDeps(cmd.Context(), allSecrets, true, func(c *config, d *deps) error {
				if err := serveWorkerHTTP(cmd.Context(), c.WorkerHTTPAddr, d); err != nil {
					return err
				}
				return runWorker(cmd.Context(), c, d)
			})
		},
	}
}

// preflightProvider refuses to start a process that runs refunds (when
// runsRefunds says so) without an explicit payment provider, before it
// connects to anything: the message must not hide behind a connection error.
func preflightProvider(runsRefunds func(*config) bool) error {
	c, err := loadConfig()
	if err != nil {
		return err
	}
	if !runsRefunds(c) {
		return nil
	}
	return c.requireProvider()
}

// sweepEvery is how often the worker's sweep looks for stuck orders.
const sweepEvery = 5 * time.Second

// reconcileScheduleID + the task queue names the Temporal Schedule of the
// periodic reconcile (one per deployment sharing a namespace).
const reconcileScheduleID = "seckill-reconcile:"

// runWorker runs the Temporal worker, the relays, the sweep and the sale
// observer (metrics) until ctx ends.
func runWorker(ctx context.Context, c *config, d *deps) error {
	servePprof(c.PprofAddr, d.log)
	c.warnProvider(d.log)
	if err := worker.CheckSearchAttributes(ctx, d.temporal, c.TemporalNamespace); err != nil {
		return err
	}
	w := d.worker(c)
	if err := w.Start(); err != nil {
		return err
	}
	d.log.Info("worker polling", "task_queue", c.TaskQueue)
	if c.ReconcileEvery > 0 {
		if err := worker.EnsureReconcileSchedule(ctx, d.temporal, reconcileScheduleID+c.TaskQueue, c.TaskQueue, c.ReconcileEvery); err != nil {
			// Reconcile is for ops; the sale must not wait for it.
			d.log.Warn("reconcile schedule not created", "error", err)
		}
	}
	orders := temporal.NewOrders(d.temporal, c.TaskQueue)
	// The relay starts at the server's pace: adaptive, concurrent, fair
	// across sessions, like the API's starter.
	starts := starter.New(starter.Config{Flow: orders, Gate: d.gate, Name: "relay", Log: d.log, Metrics: d.metrics})
	go starts.Run(ctx)
	r := &relay.Relay{Gate: d.gate, Store: d.db, Starts: starts, PayTimeout: c.PayTimeout, MinAge: c.RelayMinAge, Log: d.log, Metrics: d.metrics}
	refunds := &relay.Refunds{Store: d.db, Starter: orders, Views: d.gate, Log: d.log, Metrics: d.metrics}
	go refunds.Run(ctx, 2*time.Second)
	sw := &sweep.Sweep{Store: d.db, Gate: d.gate, Workflows: orders, Steps: d.activities(),
		PayTimeout: c.PayTimeout, Grace: c.SweepGrace, Log: d.log, Metrics: d.metrics}
	go sw.Run(ctx, sweepEvery)
	go d.metrics.Observe(ctx, c.ObserveEvery, d.observeSale)
	r.Run(ctx, time.Second)
	w.Stop()
	return nil
}

func devCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run migrations, API, worker and a demo session in one process (needs the Temporal dev server: make dev)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadConfig()
			if err != nil {
				return err
			}
			// dev is the sandbox's home: its shop pays through it.
			c.PaymentProvider = sandboxProvider
			for _, s := range []*string{&c.JWTSecret, &c.WebhookSecret, &c.AdminToken} {
				if *s == "" {
					*s = randomHex(16)
				}
			}
			ctx := cmd.Context()
			d, err := c.connect(ctx, true)
			if err != nil {
				return err
			}
			defer d.close()
			if err := d.db.Migrate(ctx); err != nil {
				return err
			}
			sess, err := demoSession(ctx, d)
			if err != nil {
				return err
			}
			srv, err := d.apiServer(c, true)
			if err != nil {
				return err
			}
			token, err := api.IssueToken([]byte(c.JWTSecret), 1, 24*time.Hour, time.Now())
			if err != nil {
				return err
			}
			printDevBanner(c, sess, token)
			g, gctx := errgroup.WithContext(ctx)
			g.Go(func() error { return runWorker(gctx, c, d) })
			g.Go(func() error { return serveAPI(gctx, c, d, srv) })
			return g.Wait()
		},
	}
}

// demoSession creates and preheats a session that is on sale for an hour.
func demoSession(ctx context.Context, d *deps) (*seckill.Session, error) {
	now := time.Now().UTC().Truncate(time.Second)
	s := &seckill.Session{SKUID: 1001, Title: "Demo flash sale", PriceCents: 1999, TotalStock: 100,
		PerUserLimit: 2, StartAt: now, EndAt: now.Add(time.Hour)}
	if err := d.db.CreateSession(ctx, s); err != nil {
		return nil, err
	}
	if _, err := d.gate.Preheat(ctx, s.ID, s.TotalStock); err != nil {
		return nil, err
	}
	return s, nil
}

func printDevBanner(c *config, s *seckill.Session, token string) {
	base := c.apiBase()
	fmt.Printf(`
seckill dev is up
  shop         %[1]s/   (this sale: %[1]s/?session=%[2]d; dev sign-in and sandbox payment are on)
  API          %[1]s   (session: %[1]s/api/v1/sessions/%[2]d)
  Temporal UI  http://127.0.0.1:8233/namespaces/%[3]s/workflows
  readiness    %[1]s/readyz
  metrics      %[1]s/metrics   (API, worker and Temporal SDK series: one process in dev)
  secrets      SECKILL_JWT_SECRET=%[4]s SECKILL_WEBHOOK_SECRET=%[5]s SECKILL_ADMIN_TOKEN=%[6]s
  shopper 1    TOKEN=%[7]s

  buy:  curl -s -X POST -H "Authorization: Bearer $TOKEN" -d '{"quantity":1}' %[1]s/api/v1/sessions/%[2]d/orders
  poll: curl -s -H "Authorization: Bearer $TOKEN" %[1]s/api/v1/orders/<order_no>
  pay timeout: %[8]s (SECKILL_PAY_TIMEOUT)

`, base, s.ID, c.TemporalNamespace, c.JWTSecret, c.WebhookSecret, c.AdminToken, token, c.PayTimeout)
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
			c, err := loadConfig()
			if err != nil {
				return err
			}
			if err := c.requireSecrets("SECKILL_JWT_SECRET"); err != nil {
				return err
			}
			if user <= 0 {
				return errors.New("--user must be a positive user id")
			}
			if ttl <= 0 {
				return errors.New("--ttl must be positive")
			}
			tok, err := api.IssueToken([]byte(c.JWTSecret), user, ttl, time.Now())
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
			return withDeps(cmd.Context(), nil, false, func(c *config, d *deps) error {
				return printReconcile(cmd.Context(), d, session, repair)
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
func printReconcile(ctx context.Context, d *deps, session int64, repair bool) error {
	var r *seckill.Report
	var out any
	var err error
	if repair {
		var rep *seckill.Repair
		if r, rep, err = seckill.RepairRedis(ctx, d.db, d.gate, session); err != nil {
			return err
		}
		out = struct {
			*seckill.Report
			Repair *seckill.Repair `json:"repair"`
		}{r, rep}
	} else {
		if r, err = d.policy.Reconcile(ctx, d.db, d.gate, session); err != nil {
			return err
		}
		out = r
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	if !r.OK {
		return &exitError{code: 2, err: fmt.Errorf("session %d: %d problems", session, len(r.Problems))}
	}
	return nil
}
