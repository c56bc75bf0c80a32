package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/caarlos0/env/v11"
	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/worker"
)

// config is read from the environment; the defaults serve a local machine.
// Defaults that are facts of another package have no envDefault tag: they
// come from that package (defaultConfig), so each is defined once.
type config struct {
	MySQLDSN          string        `env:"SECKILL_MYSQL_DSN" envDefault:"root:@tcp(127.0.0.1:3306)/seckill?parseTime=true"`
	RedisAddr         string        `env:"SECKILL_REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	RedisPrefix       string        `env:"SECKILL_REDIS_PREFIX" envDefault:"seckill"`
	TemporalAddr      string        `env:"SECKILL_TEMPORAL_ADDR" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string        `env:"SECKILL_TEMPORAL_NAMESPACE" envDefault:"default"`
	TaskQueue         string        `env:"SECKILL_TASK_QUEUE" envDefault:"seckill-orders"`
	HTTPAddr          string        `env:"SECKILL_HTTP_ADDR" envDefault:":8080"`
	PayTimeout        time.Duration `env:"SECKILL_PAY_TIMEOUT"` // seckill.DefaultPayTimeout
	// StartTimeout is deprecated and ignored: no request waits for its
	// workflow start any more (the API's starter starts it after the
	// answer). Still parsed, so an old deployment that sets it starts.
	StartTimeout time.Duration `env:"SECKILL_START_TIMEOUT"`
	SweepGrace   time.Duration `env:"SECKILL_SWEEP_GRACE"` // seckill.DefaultSweepGrace
	// RelayMinAge leaves a pending-start entry to the APIs for this long
	// before the worker's relay (the safety net) starts it.
	RelayMinAge     time.Duration `env:"SECKILL_RELAY_MIN_AGE"` // relay.DefaultMinAge
	LimitGlobalRPS  int           `env:"SECKILL_LIMIT_GLOBAL_RPS" envDefault:"20000"`
	LimitUserRPS    int           `env:"SECKILL_LIMIT_USER_RPS" envDefault:"5"`
	LimitIPRPS      int           `env:"SECKILL_LIMIT_IP_RPS" envDefault:"200"`
	LimitReadRPS    int           `env:"SECKILL_LIMIT_READ_RPS" envDefault:"100"`
	ProxyHeader     string        `env:"SECKILL_PROXY_HEADER"`
	TrustedProxies  string        `env:"SECKILL_TRUSTED_PROXIES"`
	PaymentProvider string        `env:"SECKILL_PAYMENT_PROVIDER"`
	ReconcileEvery  time.Duration `env:"SECKILL_RECONCILE_EVERY" envDefault:"1m"`
	EagerStart      bool          `env:"SECKILL_EAGER_START" envDefault:"true"`
	PprofAddr       string        `env:"SECKILL_PPROF_ADDR"`
	WorkerHTTPAddr  string        `env:"SECKILL_WORKER_HTTP_ADDR" envDefault:":8081"`
	ObserveEvery    time.Duration `env:"SECKILL_OBSERVE_EVERY" envDefault:"5s"`
	JWTSecret       string        `env:"SECKILL_JWT_SECRET"`
	WebhookSecret   string        `env:"SECKILL_WEBHOOK_SECRET"`
	AdminToken      string        `env:"SECKILL_ADMIN_TOKEN"`
	LogLevel        slog.Level    `env:"SECKILL_LOG_LEVEL" envDefault:"INFO"`

	// trusted is TrustedProxies parsed.
	trusted []netip.Prefix
}

// defaultConfig is the configuration before the environment is read: the
// defaults owned by other packages. An unset or empty variable keeps them.
func defaultConfig() config {
	return config{
		PayTimeout:  seckill.DefaultPayTimeout,
		SweepGrace:  seckill.DefaultSweepGrace,
		RelayMinAge: relay.DefaultMinAge,
	}
}

func loadConfig() (*config, error) {
	c := defaultConfig()
	if err := env.Parse(&c); err != nil {
		return nil, err
	}
	if c.PayTimeout <= 0 || c.SweepGrace <= 0 || c.RelayMinAge <= 0 {
		return nil, errors.New("SECKILL_PAY_TIMEOUT, SECKILL_SWEEP_GRACE and SECKILL_RELAY_MIN_AGE must be positive durations")
	}
	if c.PaymentProvider != "" && c.PaymentProvider != sandboxProvider {
		return nil, fmt.Errorf("SECKILL_PAYMENT_PROVIDER=%q: only %q is built in (see the seckill.PaymentProvider interface)", c.PaymentProvider, sandboxProvider)
	}
	if c.ObserveEvery <= 0 {
		return nil, errors.New("SECKILL_OBSERVE_EVERY must be a positive duration")
	}
	if c.LimitGlobalRPS < 0 || c.LimitUserRPS < 0 || c.LimitIPRPS < 0 || c.LimitReadRPS < 0 {
		return nil, errors.New("SECKILL_LIMIT_*_RPS must be 0 (off) or a positive number of requests per second")
	}
	if err := c.parseProxies(); err != nil {
		return nil, err
	}
	return &c, nil
}

// sandboxProvider is the one payment provider built in: it refunds nothing
// real (it records refunds in memory), so it must be asked for by name.
const sandboxProvider = "sandbox"

// requireProvider refuses to run refunds without a provider chosen
// explicitly. A worker that defaulted to the sandbox in production would
// mark every late payment REFUNDED while no money went back.
func (c *config) requireProvider() error {
	if c.PaymentProvider == "" {
		return fmt.Errorf("refusing to start without SECKILL_PAYMENT_PROVIDER: refunds need a payment provider; "+
			"set SECKILL_PAYMENT_PROVIDER=%s explicitly to use the in-memory sandbox (dev and tests only: it moves no money)", sandboxProvider)
	}
	return nil
}

// warnProvider says loudly, at start, that refunds go nowhere real.
func (c *config) warnProvider(log *slog.Logger) {
	if c.PaymentProvider == sandboxProvider {
		log.Warn("SANDBOX PAYMENT PROVIDER: refunds are recorded in memory and move no money; never run this in production",
			"SECKILL_PAYMENT_PROVIDER", c.PaymentProvider)
	}
}

// parseProxies validates SECKILL_TRUSTED_PROXIES and SECKILL_PROXY_HEADER
// together: a bad entry, or one without the other, stops the command with
// the reason, before it connects to anything.
func (c *config) parseProxies() error {
	trusted, err := api.ParseTrustedProxies(c.TrustedProxies)
	if err != nil {
		return fmt.Errorf("SECKILL_TRUSTED_PROXIES: %w", err)
	}
	if err := api.CheckProxies(c.ProxyHeader, trusted); err != nil {
		return err
	}
	c.trusted = trusted
	return nil
}

// requireSecrets names every missing secret, so an operator fixes them in one go.
func (c *config) requireSecrets(names ...string) error {
	vals := map[string]string{
		"SECKILL_JWT_SECRET": c.JWTSecret, "SECKILL_WEBHOOK_SECRET": c.WebhookSecret, "SECKILL_ADMIN_TOKEN": c.AdminToken,
	}
	var missing []string
	for _, n := range names {
		if vals[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("refusing to start without %v (set them in the environment; `seckill dev` makes its own)", missing)
	}
	return nil
}

// apiBase is the URL this machine reaches the API at.
func (c *config) apiBase() string {
	if c.HTTPAddr != "" && c.HTTPAddr[0] != ':' {
		return "http://" + c.HTTPAddr
	}
	return "http://127.0.0.1" + c.HTTPAddr
}

func (c *config) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel}))
}

// deps are the adapters every long-running command needs.
type deps struct {
	db       *mysql.DB
	rdb      *goredis.Client
	gate     *redis.Gate
	temporal client.Client
	log      *slog.Logger
	sandbox  *sandbox.Provider
	// metrics is the process's one registry: the API's series, the
	// worker's, and the Temporal SDK's own.
	metrics *metrics.Metrics
	// policy is when reconcile calls an order stuck: the configured pay
	// timeout and sweep grace.
	policy seckill.ReconcilePolicy
}

func (c *config) connect(ctx context.Context, withTemporal bool) (*deps, error) {
	d := &deps{log: c.logger(), metrics: metrics.New(),
		policy: seckill.ReconcilePolicy{PayTimeout: c.PayTimeout, SweepGrace: c.SweepGrace}}
	var err error
	if d.db, err = mysql.Open(ctx, c.MySQLDSN); err != nil {
		return nil, err
	}
	d.rdb = redis.NewClient(&goredis.Options{
		Addr: c.RedisAddr,
		// Admission is one short script per request: many connections, small timeouts.
		PoolSize:     256,
		MinIdleConns: 16,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
	})
	redis.Instrument(d.rdb, d.metrics)
	d.gate = redis.New(d.rdb, c.RedisPrefix)
	if err := d.gate.Load(ctx); err != nil {
		d.close()
		return nil, fmt.Errorf("redis %s: %w", c.RedisAddr, err)
	}
	if withTemporal {
		sdkMetrics, err := temporal.MetricsHandler(d.metrics.Registry, d.log)
		if err != nil {
			d.close()
			return nil, err
		}
		if d.temporal, err = temporal.Dial(ctx, c.TemporalAddr, c.TemporalNamespace, d.log, sdkMetrics); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

func (d *deps) close() {
	if d.temporal != nil {
		d.temporal.Close()
	}
	if d.rdb != nil {
		d.rdb.Close()
	}
	if d.db != nil {
		d.db.Close()
	}
}

func (d *deps) activities() *activities.Activities {
	return &activities.Activities{Store: d.db, Gate: d.gate}
}

// worker builds the Temporal worker with every workflow and activity.
func (d *deps) worker(c *config) sdkworker.Worker {
	return worker.New(d.temporal, c.TaskQueue, d.activities(), d.refunds(c), d.reconciler())
}

// observeTail is how long after its end a session stays in the sale
// metrics: unpaid orders still time out and late payments still arrive for
// a while (15 minutes by default). Older sessions are left to the scheduled
// reconcile, so the observer's cost does not grow with every sale ever held.
const observeTail = time.Hour

// observeSale reconciles, for the sale metrics, the preheated sessions on
// sale, upcoming, or ended within observeTail.
func (d *deps) observeSale(ctx context.Context) ([]seckill.Report, error) {
	reports, err := d.reconciler().ReconcileRecent(ctx, time.Now().Add(-observeTail), 200)
	if err != nil && ctx.Err() == nil {
		d.log.Warn("sale metrics: reconcile failed", "error", err)
	}
	return reports, err
}

func (d *deps) reconciler() *activities.Reconciler {
	return &activities.Reconciler{Store: d.db, Gate: d.gate, Policy: d.policy}
}

// refunds returns the refund activities with the configured provider.
func (d *deps) refunds(c *config) *activities.Refunds {
	return &activities.Refunds{Store: d.db, Gate: d.gate, Provider: d.provider(c), Metrics: d.metrics}
}

// provider is the payment provider; the sandbox is the one built in, and
// requireProvider has made sure it was chosen on purpose.
func (d *deps) provider(c *config) *sandbox.Provider {
	if d.sandbox == nil {
		d.sandbox = &sandbox.Provider{APIBase: c.apiBase(), Secret: []byte(c.WebhookSecret)}
	}
	return d.sandbox
}

// apiServer builds the API; dev adds the dev-only endpoints with the
// sandbox provider as their payer (never set by `seckill api`).
func (d *deps) apiServer(c *config, dev bool) (*api.Server, error) {
	cfg := api.Config{
		JWTSecret:     []byte(c.JWTSecret),
		WebhookSecret: []byte(c.WebhookSecret),
		AdminToken:    c.AdminToken,
		PayTimeout:    c.PayTimeout,
		SweepGrace:    c.SweepGrace,
		Limits:        api.Limits{Global: c.LimitGlobalRPS, User: c.LimitUserRPS, IP: c.LimitIPRPS, Read: c.LimitReadRPS},
		Limiter:       redis.NewLimiter(d.rdb, c.RedisPrefix),
		ProxyHeader:   c.ProxyHeader,
		Logger:        d.log,
		Metrics:       d.metrics,
	}
	cfg.TrustedProxies = c.trusted
	if dev {
		cfg.Dev, cfg.Payer = true, d.provider(c)
	}
	return api.New(cfg, d.db, d.gate, d.orders(c))
}

// orders is the workflow starter of the API. With eager start the API
// process hosts a worker too (see apiWorker), and each order's first
// workflow task comes straight back to it.
func (d *deps) orders(c *config) *temporal.Orders {
	o := temporal.NewOrders(d.temporal, c.TaskQueue)
	o.EagerStart = c.EagerStart
	return o
}
