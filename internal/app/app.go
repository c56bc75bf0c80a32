// Package app is the composition root, after the Main of benbjohnson/wtf:
// the one place that turns a Config into running adapters and wires them
// into the API, the Temporal worker, the relays and the sweep. cmd/seckill
// calls it for every long-running command and internal/testenv builds each
// test's stack through it, so production and tests cannot be wired two
// different ways. Nothing else imports it; it imports everything.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/payments"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/registrations"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/sessions"
	"github.com/seckill/seckill/sweep"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/temporal/starter"
	"github.com/seckill/seckill/tracing"
	"github.com/seckill/seckill/worker"
)

// Main holds the connected adapters of one process and builds the parts
// that run on them. Connect fills it from a Config; a test may fill the
// fields itself (its own database, prefix and task queue) and use the same
// builders.
type Main struct {
	Config *Config
	DB     *mysql.DB
	Redis  goredis.UniversalClient
	Gate   *redis.Gate
	// Temporal is nil unless dialled: reconcile and the adapter tests
	// need MySQL and Redis only.
	Temporal client.Client
	Log      *slog.Logger
	// Metrics is the process's one registry: the API's series, the
	// worker's, and the Temporal SDK's own. Nil in tests that read none.
	Metrics *metrics.Metrics
	// Policy is when reconcile calls an order stuck: the configured pay
	// timeout and sweep grace.
	Policy seckill.ReconcilePolicy
	// Sandbox is the sandbox payment provider; Provider makes it from the
	// Config when nil.
	Sandbox *sandbox.Provider
	// Payments, when set, is the payment provider instead of the
	// configured one (a test's provider that fails on purpose).
	Payments seckill.PaymentProvider
	identity identity
}

// Connect opens MySQL and Redis (and dials Temporal when withTemporal) as
// c says. On error nothing stays open.
func Connect(ctx context.Context, c *Config, withTemporal bool) (*Main, error) {
	m := &Main{Config: c, Log: c.Logger(), Metrics: metrics.New(),
		Policy: seckill.ReconcilePolicy{PayTimeout: c.PayTimeout, SweepGrace: c.SweepGrace, PreheatLead: c.PreheatLead}}
	var err error
	if m.DB, err = c.openMySQL(ctx, m.Log); err != nil {
		return nil, err
	}
	m.Redis = redis.NewAdmissionClient(c.Redis())
	redis.Instrument(m.Redis, m.Metrics)
	m.Gate = redis.New(m.Redis, c.RedisPrefix)
	if err := m.trace(); err != nil {
		m.Close()
		return nil, err
	}
	if err := m.Gate.Load(ctx); err != nil {
		m.Close()
		return nil, fmt.Errorf("redis %s: %w", c.RedisAddr, err)
	}
	if err := m.OpenIdentity(); err != nil {
		m.Close()
		return nil, err
	}
	if withTemporal {
		sdkMetrics, err := temporal.MetricsHandler(m.Metrics.Registry, m.Log)
		if err != nil {
			m.Close()
			return nil, err
		}
		if m.Temporal, err = temporal.Dial(ctx, c.Temporal(), m.Log, sdkMetrics); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

// ConnectMySQL is Connect for the commands that need MySQL alone
// (migrate, the drill's referee, the refund tools).
func ConnectMySQL(ctx context.Context, c *Config) (*Main, error) {
	log := c.Logger()
	db, err := c.openMySQL(ctx, log)
	if err != nil {
		return nil, err
	}
	return &Main{Config: c, DB: db, Log: log}, nil
}

// openMySQL opens the store, its slow statements logged at warn with the
// trace id of the request or order they ran for.
func (c *Config) openMySQL(ctx context.Context, log *slog.Logger) (*mysql.DB, error) {
	db, err := mysql.Open(ctx, c.MySQLDSN)
	if err != nil {
		return nil, err
	}
	db.LogSlowQueries(mysql.SlowQueries{Log: log, Threshold: c.MySQLSlow, TraceID: traceID})
	return db, nil
}

// traceID is the trace id a context carries, for the logs of the stores.
func traceID(ctx context.Context) string { return seckill.TraceIDFrom(ctx) }

// Close closes what Connect or ConnectMySQL opened.
func (m *Main) Close() {
	m.CloseIdentity()
	if m.Temporal != nil {
		m.Temporal.Close()
	}
	if m.Redis != nil {
		m.Redis.Close()
	}
	if m.DB != nil {
		m.DB.Close()
	}
}

// Activities are the order steps over the process's stores; an unpaid
// order's close asks the payment provider first.
func (m *Main) Activities() *activities.Activities {
	return &activities.Activities{Store: m.DB, Gate: m.Gate, Settle: &payments.Settle{
		Provider: m.PaymentProvider(), Checkouts: m.DB, Received: m.DB, Grace: m.Config.PayGrace, Now: time.Now, Log: m.Log,
	}}
}

// Refunds are the refund steps with the configured provider.
func (m *Main) Refunds() *activities.Refunds {
	return &activities.Refunds{Store: m.DB, Gate: m.Gate, Provider: m.PaymentProvider(), Metrics: m.Metrics}
}

// Checkout opens the provider's payment of an order for its shopper.
func (m *Main) Checkout() *payments.Checkout {
	return &payments.Checkout{Provider: m.PaymentProvider(), Checkouts: m.DB, Sessions: m.DB, Currency: m.Config.currency(),
		MinLeft: time.Second, Now: time.Now}
}

// Reconciler is the scheduled reconcile and the sale metrics' source.
func (m *Main) Reconciler() *activities.Reconciler {
	return &activities.Reconciler{Store: m.DB, Gate: m.Gate, Policy: m.Policy}
}

// PaymentProvider is the payment provider orders are paid and refunded
// through: the configured one, or the sandbox when it is named (by
// SECKILL_PAYMENT_PROVIDER, or `seckill dev`); nil when none is named,
// which APIServer and RunWorker refuse (Config.RequireProvider).
func (m *Main) PaymentProvider() seckill.PaymentProvider {
	if m.Payments != nil {
		return m.Payments
	}
	if p, err := m.Config.provider(); err == nil && p != nil {
		return p
	}
	if m.Config.PaymentProvider == SandboxProvider {
		return m.Provider()
	}
	return nil
}

// Provider is the sandbox payment provider, on the process's Redis: its
// checkout pages are served under /dev/checkout/ when it is the provider.
func (m *Main) Provider() *sandbox.Provider {
	if m.Sandbox == nil {
		m.Sandbox = &sandbox.Provider{APIBase: m.Config.APIBase(), CheckoutBase: m.Config.PublicBase(), Secret: m.Config.SigningWebhookSecret()}
	}
	if m.Sandbox.Redis == nil {
		m.Sandbox.Redis, m.Sandbox.Prefix = m.Redis, m.Config.RedisPrefix
	}
	return m.Sandbox
}

// Worker builds the Temporal worker with every workflow and activity.
func (m *Main) Worker() sdkworker.Worker {
	return worker.New(m.Temporal, m.Config.TaskQueue, m.Activities(), m.Refunds(), m.Reconciler(), m.Sessions())
}

// Sessions are the activities of each session's life (preheat, retire;
// the draw with the draw key, when this process holds it).
func (m *Main) Sessions() *activities.Sessions {
	key, _ := m.Config.drawKey() // checked by LoadConfig
	return &activities.Sessions{Store: m.DB, Gate: m.Gate, Policy: m.Policy, DrawKey: key, LostEvents: m.Config.EventsLost}
}

// DrawWorker is the worker of the steps that need the draw key, on the
// draw's task queue: only a process holding the key runs one.
func (m *Main) DrawWorker() sdkworker.Worker {
	return worker.NewDraw(m.Temporal, m.Config.TaskQueue, m.Sessions())
}

// Orders starts and signals order workflows on the task queue. With eager
// start the API process hosts a worker too (see RunAPI), and each order's
// first workflow task comes straight back to it.
func (m *Main) Orders() *temporal.Orders {
	o := temporal.NewOrders(m.Temporal, m.Config.TaskQueue)
	o.EagerStart = m.Config.EagerStart
	o.PreheatLead, o.RetainAfter = m.Config.PreheatLead, m.Config.RetainAfter
	return o
}

// APIConfig is the API's configuration from the Config; dev adds the
// dev-only sign-in (never set by `seckill api`). Only with the sandbox
// named as the payment provider does the API serve its checkout pages.
func (m *Main) APIConfig(dev bool) APIConfig {
	c := m.Config
	cfg := APIConfig{Config: api.Config{
		JWTSecret:             c.SigningJWTSecret(),
		Shoppers:              m.Shoppers(),
		WebhookSecret:         c.SigningWebhookSecret(),
		RotatedWebhookSecrets: c.RotatedWebhookSecrets(),
		Operators:             m.Operators(),
		ProxyHeader:           c.ProxyHeader,
		TrustedProxies:        c.trusted,
		Logger:                m.Log,
		Metrics:               m.Metrics,
		Dev:                   dev,
		WorkflowLink:          c.workflowLink(c.TemporalNamespace),
	},
		RotatedJWTSecrets: c.RotatedJWTSecrets(),
		AdminToken:        c.BootstrapToken(),
		Fleet:             redis.NewFleet(m.Redis, c.RedisPrefix),
		PayTimeout:        c.PayTimeout,
		SweepGrace:        c.SweepGrace,
		Limits: Limits{Global: c.LimitGlobalRPS, User: c.LimitUserRPS, IP: c.LimitIPRPS, Read: c.LimitReadRPS, Device: c.LimitDeviceRPS,
			AdminFails: c.LimitAdminFails},
		Currency: c.currency(),
		Risk:     c.Risk(),
		Limiter:  redis.NewLimiter(m.Redis, c.RedisPrefix),
		Captchas: redis.NewCaptchas(m.Redis, c.RedisPrefix),
	}
	cfg.Controls = &sessions.Controls{Store: m.DB, Stock: m.Gate, Lives: m.Orders(), Log: m.Log, Applied: m.Metrics.SessionChanged,
		Currency: c.currency()}
	cfg.Registrations = &registrations.Desk{Store: m.DB, Set: m.Gate}
	cfg.Checkout = m.Checkout()
	cfg.Refund = &payments.Refund{Store: m.DB, Gate: m.Gate}
	cfg.CORSOrigins, _ = c.origins()       // checked by LoadConfig
	cfg.StripeEvents, _ = c.stripeEvents() // nil without its secret: APIServer refuses that
	if c.PaymentProvider == SandboxProvider {
		cfg.CheckoutPages = m.Provider()
	}
	return cfg
}

// sweepEvery is how often the worker's sweep looks for stuck orders.
const sweepEvery = 5 * time.Second

// reconcileScheduleID + the task queue names the Temporal Schedule of the
// periodic reconcile (one per deployment sharing a namespace).
const reconcileScheduleID = "seckill-reconcile:"

// RunWorker runs the Temporal worker, the relays, the sweep and the sale
// observer (metrics) until ctx ends.
func (m *Main) RunWorker(ctx context.Context) error {
	c := m.Config
	if err := c.RequireProvider(); err != nil {
		return err
	}
	ServePprof(c.PprofAddr, m.Log)
	c.WarnProvider(m.Log)
	if err := worker.CheckSearchAttributes(ctx, m.Temporal, c.TemporalNamespace); err != nil {
		return err
	}
	if err := c.RequireDrawKey(); err != nil {
		return err
	}
	w := m.Worker()
	if err := w.Start(); err != nil {
		return err
	}
	dw := m.DrawWorker()
	if err := dw.Start(); err != nil {
		w.Stop()
		return err
	}
	m.Log.Info("worker polling", "task_queue", c.TaskQueue)
	if c.ReconcileEvery > 0 {
		if err := worker.EnsureReconcileSchedule(ctx, m.Temporal, reconcileScheduleID+c.TaskQueue, c.TaskQueue, c.ReconcileEvery); err != nil {
			// Reconcile is for ops; the sale must not wait for it.
			m.Log.Warn("reconcile schedule not created", "error", err)
		}
	}
	// The worker hosts a worker on this client: its starts are eager too.
	orders := m.Orders()
	// The relay starts at the server's pace: adaptive, concurrent, fair
	// across sessions, like the API's starter.
	starts := starter.New(starter.Config{Flow: orders, Gate: m.Gate, Name: "relay", Log: m.Log, Metrics: m.Metrics})
	go starts.Run(ctx)
	r := &relay.Relay{Gate: m.Gate, Store: m.DB, Starts: starts, PayTimeout: c.PayTimeout, MinAge: c.RelayMinAge, Log: m.Log, Metrics: m.Metrics}
	refunds := &relay.Refunds{Store: m.DB, Starter: orders, Views: m.Gate, Log: m.Log, Metrics: m.Metrics}
	go refunds.Run(ctx, 2*time.Second)
	sw := &sweep.Sweep{Store: m.DB, Gate: m.Gate, Workflows: orders, Steps: m.Activities(),
		PayTimeout: c.PayTimeout, Grace: c.SweepGrace, Log: m.Log, Metrics: m.Metrics}
	go sw.Run(ctx, sweepEvery)
	go m.Metrics.Observe(ctx, c.ObserveEvery, m.observeSale)
	go m.EventsRelay().Run(ctx, time.Second)
	lives := &relay.SessionLives{Store: m.DB, Starter: orders, Log: m.Log}
	go lives.Run(ctx, time.Minute)
	r.Run(ctx, time.Second)
	dw.Stop()
	w.Stop()
	return nil
}

// EventsRelay sequences the order events into the feed and, with
// SECKILL_EVENTS_URL, delivers them.
func (m *Main) EventsRelay() *relay.Events {
	c := m.Config
	attempts := c.EventsAttempts
	if attempts <= 0 {
		attempts = seckill.DefaultEventAttempts // a Config built by hand
	}
	return &relay.Events{Store: m.DB, URL: c.EventsURL, Secret: []byte(c.EventsSecret), UnsentRetention: c.EventsUnsent,
		Retry: seckill.EventRetry(attempts), Log: m.Log, Metrics: m.Metrics, Transport: tracing.Transport(nil)}
}

// observeTail is how long after its end a session stays in the sale
// metrics: unpaid orders still time out and late payments still arrive for
// a while (15 minutes by default). Older sessions are left to the scheduled
// reconcile, so the observer's cost does not grow with every sale ever held.
const observeTail = time.Hour

// observeSale reconciles, for the sale metrics, the preheated sessions on
// sale, upcoming, or ended within observeTail.
func (m *Main) observeSale(ctx context.Context) ([]seckill.Report, error) {
	reports, err := m.Reconciler().ReconcileRecent(ctx, time.Now().Add(-observeTail), 200)
	if err != nil && ctx.Err() == nil {
		m.Log.Warn("sale metrics: reconcile failed", "error", err)
	}
	return reports, err
}
