package app

import (
	"context"
	"log/slog"
	"time"

	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/sync/errgroup"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal/starter"
)

// OutboxAge is how old a pending-start entry must be before an API's
// outbox relay starts it: younger ones are still in some API's starter
// queue.
const OutboxAge = 3 * time.Second

// APIGate is the Redis side of an API process: its handlers', its
// starter's and its outbox relay's.
type APIGate interface {
	api.Gate
	relay.Gate
}

// API is one API process: the HTTP server, the starter that starts its
// winners' workflows after their answer, and the outbox relay that starts
// the pending ones no starter holds (a full queue, a crashed API).
type API struct {
	*api.Server
	Starts *starter.Starter
	outbox *relay.Relay
	log    *slog.Logger
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
// wrapped ones): one starter and one outbox relay, on the same gate and
// flow as the handlers, the starter holding its starts while the order
// route answers a burst (the same FrontDoor).
func NewAPI(cfg api.Config, sc starter.Config, store api.Store, gate APIGate, flow api.Flow) (*API, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New() // one set for the handlers and the starter
	}
	if cfg.PayTimeout <= 0 {
		cfg.PayTimeout = seckill.DefaultPayTimeout // the outbox's orders count from their reservation too
	}
	door := cfg.Door
	if door == nil {
		door = &admission.FrontDoor{}
	}
	sc.Flow, sc.Gate, sc.Log, sc.Metrics, sc.Name = flow, gate, cfg.Logger, cfg.Metrics, "api"
	if sc.Busy == nil {
		sc.Busy = func() bool { return door.Busy(time.Now()) }
		sc.Settle = admission.DoorSettle
	}
	starts := starter.New(sc)
	cfg.Starts, cfg.Door = starts, door
	srv, err := api.New(cfg, store, gate, flow)
	if err != nil {
		return nil, err
	}
	a := &API{Server: srv, Starts: starts, log: cfg.Logger}
	a.outbox = &relay.Relay{Gate: gate, Store: store, Starts: starts, PayTimeout: cfg.PayTimeout,
		MinAge: OutboxAge, Log: cfg.Logger, Metrics: cfg.Metrics, When: func() bool { return starts.Queued() == 0 }}
	a.startsCtx, a.stopStarts = context.WithCancel(context.Background())
	return a, nil
}

// Start runs the server's background loops, the starter and the outbox
// relay until ctx ends (the starter until Shutdown).
func (a *API) Start(ctx context.Context) {
	a.Server.Start(ctx)
	go a.Starts.Run(a.startsCtx)
	go a.outbox.Run(ctx, time.Second)
}

// Shutdown leaves the fleet and waits (until ctx ends) for the starter to
// drain its queue and its starts in flight, so a deploy does not leave
// them to the outbox; what is left when ctx ends waits there for another
// API or the worker's relay.
func (a *API) Shutdown(ctx context.Context) {
	defer a.stopStarts()
	a.Server.Shutdown(ctx)
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
