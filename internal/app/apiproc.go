package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/captcha"
	"github.com/seckill/seckill/fleet"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/orders"
	"github.com/seckill/seckill/payments"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sessions"
	"github.com/seckill/seckill/temporal/starter"
)

// OutboxAge is how old a pending-start entry must be before an API's
// outbox relay starts it: younger ones are still in some API's starter
// queue.
const OutboxAge = 3 * time.Second

// APIStore is the MySQL side of an API process: what its use cases, its
// routes and its outbox relay read and write.
type APIStore interface {
	payments.Ledger                                                                         // the payment intake (and the order finder's rows)
	admission.Blocklist                                                                     // the blocklist admission copies into memory
	api.Blocklist                                                                           // the admin's blocklist
	api.SessionAudit                                                                        // the session cache's loads, the admin's audit, the outbox relay's sessions
	OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error) // the public list
	api.OrderHistory                                                                        // a shopper's orders
	api.EventFeed                                                                           // the admin's events
	api.OrderRecords                                                                        // the admin's order list, record and export
	// Reconcile, and its repair of Redis from MySQL.
	seckill.DBSnapshotter
	seckill.HoldingsLister
	Ping(ctx context.Context) error
}

// APIGate is the Redis side of an API process: its use cases', its
// routes', its starter's and its outbox relay's.
type APIGate interface {
	admission.Stock                                                         // admission, and its sold-out memory
	admission.Tickets                                                       // purchase tickets, used once
	orders.Views                                                            // the order finder's views
	payments.Reservations                                                   // the payment intake's view of a QUEUED order
	Stock(ctx context.Context, sessionID int64) (int, bool, error)          // the session views' stock
	ItemStocks(ctx context.Context, sessionID int64) (map[int64]int, error) // a sale of items' stock
	orders.Backlogs                                                         // a QUEUED order's poll, its line
	relay.Gate                                                              // the outbox relay (and the starter's starts confirmed)
	// Reconcile, and its repair of Redis from MySQL.
	seckill.RedisSnapshotter
	seckill.Rebuilder
	Ping(ctx context.Context) error
}

// APIFlow is the Temporal side of an API process: the starter's (and the
// outbox relay's) starts, the payment intake's delivery, the shopper's
// cancel.
type APIFlow interface {
	starter.Flow
	payments.Workflows
	api.OrderCancels
	Ping(ctx context.Context) error
}

// APIConfig is an API process's configuration: its HTTP server's
// (api.Config) and its use cases' settings.
type APIConfig struct {
	api.Config
	// RotatedJWTSecrets are the others of a JWT secret rotation: with
	// JWTSecret they key admission's tickets and device cookies, and
	// verify shoppers' tokens when Shoppers is nil (HS256).
	RotatedJWTSecrets [][]byte
	// AdminToken is the bootstrap admin (SECKILL_ADMIN_TOKEN), the only
	// one when Operators is nil.
	AdminToken string
	// Fleet, when set, makes Limits.Global the budget of every API process
	// of the deployment together, split among the live ones (see
	// fleet.Share); nil: Limits.Global is this process's alone.
	Fleet fleet.Members
	// SessionCacheTTL is how stale a session's metadata and the public
	// session list may be in each process (a second when 0).
	SessionCacheTTL time.Duration
	// Currency is the deployment's (SECKILL_CURRENCY): the sessions
	// without their own are shown in it.
	Currency string
	// Limits are requests per second, 0 turns one off: Global, Read and
	// AdminFails are the HTTP server's (they replace api.Config's Global
	// and Limits), User, IP and Device admission's, enforced by Limiter
	// (required when any of those is on).
	Limits  Limits
	Limiter admission.Limiter
	// Captchas keeps the answers of the captchas of sessions that require
	// one (every API process shares it); nil: such sessions answer 503.
	Captchas captcha.Store
	// Risk is the check before admission: User-Agent rules, the shop's
	// risk service.
	Risk admission.RiskConfig
	// PayTimeout is handed to each order's workflow (15m in production).
	PayTimeout time.Duration
	// SweepGrace is how long past its deadline an order may wait before
	// reconcile calls it stuck (SECKILL_SWEEP_GRACE; the worker's sweep
	// closes it then); seckill.DefaultSweepGrace when 0.
	SweepGrace time.Duration
	// SoldOutRecheck is how often a process re-reads the stock of sessions
	// it has flagged sold out (default 200ms).
	SoldOutRecheck time.Duration
	// Controls are the operator's session controls, Registrations the
	// reserved sales' desk, Checkout the payment checkout and Refund an
	// operator's refund (nil: their routes answer 503).
	Controls      api.SessionControls
	Registrations api.Registrations
	Checkout      api.Checkout
	Refund        api.OrderRefund
}

// Limits are an API's rate limits, requests per second; 0 turns one off.
type Limits struct {
	// Global is the bucket in front of everything (this process's share
	// of it: fleet.Share, api.Config.Global); Read and AdminFails are the
	// HTTP server's (api.Limits).
	Global, Read, AdminFails int
	// User and IP are fleet-wide, in Redis; so is Device, per device
	// cookie, for requests that carry one (admission.Limits).
	User, IP, Device int
}

// API is one API process: the HTTP server, the use cases it calls, the
// starter that starts its winners' workflows after their answer, and the
// outbox relay that starts the pending ones no starter holds (a full
// queue, a crashed API).
type API struct {
	*api.Server
	Starts *starter.Starter
	// Admission, Sessions and Orders are the use cases with state of
	// their own: the purchase decision (its loops run from Start), the
	// session cache, the order finder.
	Admission *admission.Service
	Sessions  *sessions.Cache
	Orders    *orders.Finder
	outbox    *relay.Relay
	log       *slog.Logger
	// global is this process's share of the fleet's global rate limit
	// (nil: none).
	global *fleet.Share
	// stopStarts ends the starter's loop once Shutdown drained it: the
	// loop outlives Start's context, since the drain needs it running.
	startsCtx  context.Context
	stopStarts context.CancelFunc
}

// ShutdownTimeout bounds an API's drain of requests and workflow starts
// after its drain delay (deploy/helm's grace period counts on it).
const ShutdownTimeout = 15 * time.Second

// StarterConfig is the API starter's tuning from the Config.
func (m *Main) StarterConfig() starter.Config {
	sc := starter.Config{Yield: m.Config.StarterYield}
	if sc.Yield == 0 {
		sc.Yield = -1 // off (the starter's zero value is its default)
	}
	return sc
}

// NewAPI assembles an API process on the given adapters (a test passes
// wrapped ones): its use cases, one starter and one outbox relay, on the
// same gate and flow as the handlers, the starter holding its starts
// while the order route answers a burst (the same FrontDoor).
func NewAPI(cfg APIConfig, sc starter.Config, store APIStore, gate APIGate, flow APIFlow) (*API, error) {
	l := cfg.Limits
	if (l.User > 0 || l.IP > 0 || l.Device > 0) && cfg.Limiter == nil {
		return nil, errors.New("per-user and per-IP limits need a Limiter")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New() // one set for the handlers, admission and the starter
	}
	if cfg.PayTimeout <= 0 {
		cfg.PayTimeout = seckill.DefaultPayTimeout // the outbox's orders count from their reservation too
	}
	if cfg.SessionCacheTTL <= 0 {
		cfg.SessionCacheTTL = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Door == nil {
		cfg.Door = &admission.FrontDoor{}
	}
	if cfg.Shoppers == nil {
		cfg.Shoppers = &auth.Shoppers{Secrets: append([][]byte{cfg.JWTSecret}, cfg.RotatedJWTSecrets...), Now: cfg.Now}
	}
	if cfg.Operators == nil {
		cfg.Operators = &auth.Operators{Bootstrap: cfg.AdminToken, Now: cfg.Now}
	}
	door := cfg.Door
	sc.Flow, sc.Gate, sc.Log, sc.Metrics, sc.Name = flow, gate, cfg.Logger, cfg.Metrics, "api"
	if sc.Busy == nil {
		sc.Busy = func() bool { return door.Busy(time.Now()) }
		sc.Settle = admission.DoorSettle
	}
	a := &API{Starts: starter.New(sc), log: cfg.Logger}
	a.Sessions = sessions.NewCache(cfg.SessionCacheTTL, func(ctx context.Context, id int64) (*seckill.Session, error) {
		sess, _, err := store.Session(ctx, id)
		return sess, err
	})
	a.Admission = admission.New(admission.Config{Sessions: a.Sessions, Stock: gate, Starts: a.Starts,
		Blocklist: store, Tickets: gate, Captchas: cfg.Captchas, Risk: cfg.Risk, Secrets: append([][]byte{cfg.JWTSecret}, cfg.RotatedJWTSecrets...),
		PayTimeout: cfg.PayTimeout, Limits: admission.Limits{Limiter: cfg.Limiter, User: l.User, IP: l.IP, Device: l.Device},
		SoldOutRecheck: cfg.SoldOutRecheck, Now: cfg.Now, Log: cfg.Logger, Metrics: cfg.Metrics})
	// The intake finds orders as the handlers do (the views, the caches).
	a.Orders = orders.New(gate, store, a.Sessions, cfg.PayTimeout)
	intake := &payments.Intake{Ledger: store, Orders: a.Orders, Reservations: gate, Workflows: flow,
		Sessions: a.Sessions, PayTimeout: cfg.PayTimeout, Log: cfg.Logger}
	httpCfg := cfg.Config
	httpCfg.Limits = api.Limits{Read: l.Read, AdminFails: l.AdminFails}
	if a.global = fleet.NewShare(l.Global, cfg.Fleet, cfg.Metrics, cfg.Logger); a.global != nil {
		httpCfg.Global = a.global
	}
	srv, err := api.New(httpCfg, api.Services{
		Admission: a.Admission, Sessions: a.Sessions,
		Views:  &sessions.Views{Stock: gate, Open: store, TTL: cfg.SessionCacheTTL, Now: cfg.Now, Currency: cfg.Currency},
		Orders: a.Orders, Line: orders.NewLine(gate, cfg.Now), Cancels: flow, History: store, Payments: intake,
		Checkout: cfg.Checkout, Refund: cfg.Refund,
		Controls: cfg.Controls, Audit: store, Blocklist: store, Events: store, Backoffice: store,
		Reconcile:     reconciler{policy: seckill.ReconcilePolicy{PayTimeout: cfg.PayTimeout, SweepGrace: cfg.SweepGrace}, db: store, rd: gate},
		Registrations: cfg.Registrations,
		Dependencies:  map[string]func(context.Context) error{"mysql": store.Ping, "redis": gate.Ping, "temporal": flow.Ping},
	})
	if err != nil {
		return nil, err
	}
	a.Server = srv
	a.outbox = &relay.Relay{Gate: gate, Store: store, Starts: a.Starts, PayTimeout: cfg.PayTimeout,
		MinAge: OutboxAge, Log: cfg.Logger, Metrics: cfg.Metrics, When: func() bool { return a.Starts.Queued() == 0 }}
	a.startsCtx, a.stopStarts = context.WithCancel(context.Background())
	return a, nil
}

// reconciler is the admin's reconcile of one session on the API's
// stores, with the API's policy.
type reconciler struct {
	policy seckill.ReconcilePolicy
	db     APIStore
	rd     APIGate
}

func (r reconciler) Reconcile(ctx context.Context, sessionID int64) (*seckill.Report, error) {
	return r.policy.Reconcile(ctx, r.db, r.rd, sessionID)
}

func (r reconciler) RepairRedis(ctx context.Context, sessionID int64) (*seckill.Report, *seckill.Repair, error) {
	return seckill.RepairRedis(ctx, r.db, r.rd, sessionID)
}

// Start runs admission's loops (the blocklist, the sold-out watcher), the
// server's, the starter and the outbox relay until ctx ends (the starter
// until Shutdown).
func (a *API) Start(ctx context.Context) {
	a.Admission.Start(ctx)
	a.Server.Start(ctx)
	if a.global != nil {
		a.global.Start(ctx)
	}
	go a.Starts.Run(a.startsCtx)
	go a.outbox.Run(ctx, time.Second)
}

// Shutdown leaves the fleet and waits (until ctx ends) for the starter to
// drain its queue and its starts in flight, so a deploy does not leave
// them to the outbox; what is left when ctx ends waits there for another
// API or the worker's relay.
func (a *API) Shutdown(ctx context.Context) {
	defer a.stopStarts()
	if a.global != nil {
		// The other APIs take this one's share of the global limit at once.
		a.global.Leave(ctx)
	}
	if !a.Starts.Drain(ctx) {
		a.log.Warn("shutdown: workflow starts left to the outbox", "queued", a.Starts.Queued(), "in_flight", a.Starts.InFlight())
	}
}

// APIServer builds the API on the process's adapters. It refuses to
// without a payment provider named (the API opens checkouts), and with
// Stripe as the provider without the webhook's signing secret.
func (m *Main) APIServer(dev bool) (*API, error) {
	if err := m.Config.RequireProvider(); err != nil {
		return nil, err
	}
	if _, err := m.Config.stripeEvents(); err != nil {
		return nil, err
	}
	return NewAPI(m.APIConfig(dev), m.StarterConfig(), m.DB, m.Gate, m.Orders())
}

// RunAPI serves the API (with an embedded worker for eager starts) until
// ctx ends.
func (m *Main) RunAPI(ctx context.Context) error {
	c := m.Config
	ServePprof(c.PprofAddr, m.Log)
	if c.StartTimeout != 0 {
		m.Log.Warn("SECKILL_START_TIMEOUT is deprecated and ignored: winners no longer wait for their workflow start (the API's starter starts it after the answer)")
	}
	c.WarnProvider(m.Log)
	srv, err := m.APIServer(false)
	if err != nil {
		return err
	}
	if c.EagerStart {
		// Eager start needs a worker on the same client: it takes the
		// first workflow task of each order this API starts (the
		// CreateOrder step); everything later goes to any worker. No
		// sticky cache here, so that "any worker" holds: with one, every
		// later task of the order (the payment, the pay timer) went to
		// this process's sticky queue, which its pollers did not drain
		// while it served a sale, and each fired timer's task sat there
		// until the sticky timeout, then took the shared queue anyway.
		// The process-wide cache must be set before the worker starts;
		// `seckill api` runs no other worker.
		sdkworker.SetStickyWorkflowCacheSize(0)
		w := m.Worker()
		if err := w.Start(); err != nil {
			return err
		}
		defer w.Stop()
	}
	return m.ServeAPI(ctx, srv)
}

// ServeAPI listens until ctx ends; then /readyz answers 503 while the API
// keeps serving for the drain delay (SECKILL_DRAIN_DELAY), so balancers
// take it out before it stops accepting; then it drains requests and
// background starts.
func (m *Main) ServeAPI(ctx context.Context, srv *API) error {
	app := srv.App()
	// The background loops (blocklist, fleet heartbeat, outbox) outlive
	// ctx by the delay: the API still sells then.
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	srv.Start(loops)
	errc := make(chan error, 1)
	go func() { errc <- app.Listen(m.Config.HTTPAddr) }()
	m.Log.Info("api listening", "addr", m.Config.HTTPAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	srv.Drain()
	if d := m.Config.DrainDelay; d > 0 {
		m.Log.Info("draining: /readyz answers 503, serving on until the delay ends", "delay", d)
		select {
		case err := <-errc:
			return err
		case <-time.After(d):
		}
	}
	stopLoops()
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := app.ShutdownWithContext(sctx)
	srv.Shutdown(sctx)
	return err
}

// RunDev runs the worker and the dev API side by side in this process
// (`seckill dev`) until ctx ends or either fails.
func (m *Main) RunDev(ctx context.Context, srv *API) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.RunWorker(gctx) })
	g.Go(func() error { return m.ServeAPI(gctx, srv) })
	return g.Wait()
}
