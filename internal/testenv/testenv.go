// Package testenv gives each integration test its own slice of the real
// services: a fresh MySQL database with the migrations applied, a Redis key
// prefix, a Temporal task queue with a running worker, and the HTTP API on a
// loopback port. The stack is wired by internal/app, the composition root
// the binary uses, so a test runs what production runs. Temporal is dialled
// only for an Env that runs a worker or the API, or asks for it (Options.
// Temporal): the MySQL and Redis adapter tests need no Temporal server. A
// missing service fails the test loudly with the command that starts it;
// nothing is skipped.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/temporal/starter"
	"github.com/seckill/seckill/worker"
)

// Secrets every test environment's API uses, as long as a real process
// requires (app.MinSecretBytes).
var (
	JWTSecret     = []byte("test-jwt-secret-of-thirty-two-bytes")
	WebhookSecret = []byte("test-webhook-secret")
)

const AdminToken = "test-admin-token-of-thirty-two-bytes"

// DrawKey is the tests' SECKILL_DRAW_KEY: the Env's worker seals draw
// seeds with it.
const DrawKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// Env is one test's slice of the services.
type Env struct {
	T testing.TB
	// operators are the named tokens OperatorToken made, by name.
	operatorsMu sync.Mutex
	operators   map[string]string
	DSN         string
	DB          *mysql.DB
	Redis       goredis.UniversalClient
	// RedisAddr is the Env's Redis in SECKILL_REDIS_ADDR's form (a
	// comma-separated list is a Redis Cluster's seeds; with RedisMaster,
	// the Sentinels).
	RedisAddr   string
	RedisMaster string
	Prefix      string
	Gate        *redis.Gate
	// Temporal is nil unless the Env dialled it (see Options.Temporal).
	Temporal client.Client
	// TemporalAddr is the frontend the Env's clients use.
	TemporalAddr string
	TaskQueue    string
	Orders       *temporal.Orders
	Worker       sdkworker.Worker
	// App is the composition root over this Env's adapters: the worker
	// and the API are built by it, as in the binary.
	App *app.Main
	// Provider is the sandbox payment provider: refunds land here, and it
	// pays orders through the API's webhook.
	Provider *sandbox.Provider
	// ProviderRefunds are the refunds the payment provider made, by payment
	// id, for the invariant that each refunded payment has exactly one:
	// the sandbox's unless a test runs another provider.
	ProviderRefunds func() map[string]seckill.Refund
	API             *app.API
	BaseURL         string
	Log             *slog.Logger

	// http sends Do's and the clients' requests (checkAnswers).
	http *http.Client
}

// Options tune an Env.
type Options struct {
	PayTimeout time.Duration // default 15m
	// PreheatLead and RetainAfter are each session's life (defaults 5m, 24h).
	PreheatLead, RetainAfter time.Duration
	NoWorker                 bool // start no worker (tests that start their own)
	NoAPI                    bool
	// Temporal dials Temporal even with NoWorker and NoAPI (a test that
	// starts workflows or workers itself); an Env running a worker or the
	// API always dials it.
	Temporal bool
	// TemporalAddr overrides the Temporal server (a drill's own server).
	TemporalAddr string
	// Limits are off unless a test sets them.
	Limits app.Limits
	// Dev mounts the API's dev-only sign-in (what `seckill dev` does).
	Dev bool
	// WrapPayments lets a test disturb the payment provider (the Env's
	// sandbox) that the API and the worker use; PayGrace is how long an
	// order's close waits for an unreachable provider (default 2m).
	WrapPayments func(*sandbox.Provider) seckill.PaymentProvider
	PayGrace     time.Duration
	// Configure changes the Env's configuration before the worker and
	// the API are built from it (a test choosing another payment
	// provider: the stripe one on stripe-mock).
	Configure func(*app.Config)
	// WrapStore and WrapGate let a test observe or disturb the API's
	// MySQL store and Redis gate.
	WrapStore func(app.APIStore) app.APIStore
	WrapGate  func(app.APIGate) app.APIGate
	WrapFlow  func(app.APIFlow) app.APIFlow
	// Starter tunes the API's workflow starter (e.g. a tiny queue).
	Starter starter.Config
	// Logger replaces the API's logger (a test reading its log lines).
	Logger *slog.Logger
	// RedisServer is the Env's Redis, for every client of the Env (its
	// gate, the worker, the API, the processes it spawns), in
	// SECKILL_REDIS_ADDR's form: a comma-separated list is a Redis
	// Cluster's seeds (RedisCluster.Addr). Default: SECKILL_TEST_REDIS_ADDR
	// or 127.0.0.1:6379.
	RedisServer string
	// MySQLServer is the Env's MySQL server (host:port, user root without
	// a password). Default: SECKILL_TEST_MYSQL_DSN or 127.0.0.1:3306.
	MySQLServer string
	// RedisMaster makes RedisServer the Sentinels of this master
	// (SECKILL_REDIS_MASTER).
	RedisMaster string
	// RedisAddr points the API's Redis client (gate and limiter) at
	// another address, e.g. a Toxi in front of Redis; RedisReadTimeout
	// sets its read timeout (go-redis's default when zero).
	RedisAddr        string
	RedisReadTimeout time.Duration
	// SessionCacheTTL is how long the API keeps session metadata in
	// memory (50 ms unless set, so tests see edits at once; production's
	// is 1 s, which a test counting MySQL queries per admission needs).
	SessionCacheTTL time.Duration
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func randomName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SkipShort skips t under `go test -short`, naming what it needs: -short
// runs exactly the tests that need no service (and passes with none
// reachable); without -short a missing service fails loudly instead.
func SkipShort(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s: skipped under -short", needs)
	}
}

// New builds an Env and registers its cleanup with t.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	withTemporal := o.Temporal || !o.NoWorker || !o.NoAPI
	if withTemporal {
		SkipShort(t, "MariaDB, Redis and the Temporal dev server")
	} else {
		SkipShort(t, "MariaDB and Redis")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := randomName()
	e := &Env{T: t, Prefix: "test-" + name, TaskQueue: "test-" + name, Provider: &sandbox.Provider{Secret: WebhookSecret}}
	e.checkAnswers()
	if testing.Verbose() {
		e.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	} else {
		e.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	// MySQL: a fresh database per test.
	base := env("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/")
	if o.MySQLServer != "" {
		base = "root:@tcp(" + o.MySQLServer + ")/"
	}
	e.DSN = strings.Replace(base, ")/", ")/seckill_test_"+name, 1) + "?parseTime=true"
	if strings.Contains(base, "?") {
		t.Fatalf("SECKILL_TEST_MYSQL_DSN must end with ')/' and no parameters, got %q", base)
	}
	db, err := mysql.Open(ctx, e.DSN)
	if err != nil {
		t.Fatalf("MySQL is not reachable (%v).\nStart it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd\nor point SECKILL_TEST_MYSQL_DSN at one", err)
	}
	e.DB = db
	t.Cleanup(func() {
		db.Close()
		_ = mysql.DropDatabase(context.Background(), e.DSN)
	})
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}

	// Redis: a key prefix per test.
	e.RedisAddr = env("SECKILL_TEST_REDIS_ADDR", "127.0.0.1:6379")
	if o.RedisServer != "" {
		e.RedisAddr = o.RedisServer
	}
	e.RedisMaster = o.RedisMaster
	e.Redis = redis.NewClient(&goredis.UniversalOptions{Addrs: redis.ParseAddrs(e.RedisAddr), MasterName: e.RedisMaster, PoolSize: 64})
	if err := e.Redis.Ping(ctx).Err(); err != nil {
		t.Fatalf("Redis is not reachable (%v).\nStart it with: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no", err)
	}
	e.Gate = redis.New(e.Redis, e.Prefix)
	t.Cleanup(func() {
		_ = redis.DeletePrefix(context.Background(), e.Redis, e.Prefix)
		e.Redis.Close()
	})

	e.App = &app.Main{
		Config: &app.Config{RedisPrefix: e.Prefix, TaskQueue: e.TaskQueue, TemporalNamespace: "default", PaymentProvider: app.SandboxProvider,
			PayTimeout: o.PayTimeout, PayGrace: o.PayGrace, PreheatLead: o.PreheatLead, RetainAfter: o.RetainAfter,
			JWTSecret: string(JWTSecret), WebhookSecret: string(WebhookSecret), AdminToken: AdminToken, DrawKey: DrawKey},
		DB: db, Redis: e.Redis, Gate: e.Gate, Log: e.Log, Sandbox: e.Provider,
	}
	if o.Configure != nil {
		o.Configure(e.App.Config)
	}
	if err := e.App.OpenIdentity(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.App.CloseIdentity)
	e.ProviderRefunds = e.App.Provider().Refunds // on the Env's Redis from here
	if o.WrapPayments != nil {
		e.App.Payments = o.WrapPayments(e.App.Provider())
	}

	// Temporal: the dev server, a task queue per test. The address is set
	// even when not dialled: processes a test spawns use it.
	addr := env("SECKILL_TEST_TEMPORAL_ADDR", "127.0.0.1:7233")
	if o.TemporalAddr != "" {
		addr = o.TemporalAddr
	}
	e.TemporalAddr = addr
	if withTemporal {
		e.dialTemporal(ctx)
	}
	if !o.NoWorker {
		e.StartWorker()
	}
	if !o.NoAPI {
		e.startAPI(o)
	}
	return e
}

// dialTemporal connects the Env to Temporal and checks the search
// attributes the workflows upsert.
func (e *Env) dialTemporal(ctx context.Context) {
	t, addr := e.T, e.TemporalAddr
	t.Helper()
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	tc, err := temporal.Dial(dctx, client.Options{HostPort: addr, Namespace: "default"}, e.Log, nil)
	if err != nil {
		t.Fatalf("Temporal is not reachable at %s (%v).\nStart the dev server with: make temporal", addr, err)
	}
	e.Temporal, e.App.Temporal = tc, tc
	t.Cleanup(tc.Close)
	if err := worker.CheckSearchAttributes(ctx, tc, "default"); err != nil {
		t.Fatalf("%v", err)
	}
	e.Orders = e.App.Orders()
}

// Activities returns the real activities over this Env's stores.
func (e *Env) Activities() *activities.Activities {
	return e.App.Activities()
}

// StartWorker starts a worker on the Env's task queue, and one on its
// draw's (the steps that need the draw key), as `seckill worker` does.
func (e *Env) StartWorker() {
	e.T.Helper()
	e.Worker = e.App.Worker()
	if err := e.Worker.Start(); err != nil {
		e.T.Fatalf("start worker: %v", err)
	}
	w := e.Worker
	e.T.Cleanup(w.Stop)
	dw := e.App.DrawWorker()
	if err := dw.Start(); err != nil {
		e.T.Fatalf("start the draw's worker: %v", err)
	}
	e.T.Cleanup(dw.Stop)
}

func (e *Env) startAPI(o Options) {
	e.T.Helper()
	var store app.APIStore = e.DB
	if o.WrapStore != nil {
		store = o.WrapStore(store)
	}
	var gate app.APIGate = e.Gate
	cfg := e.App.APIConfig(o.Dev)
	cfg.Limits = o.Limits
	cfg.SessionCacheTTL = 50 * time.Millisecond
	// No background pings: tests count the commands the servers see (the
	// capacity model, to the byte); metrics' own test covers the pings.
	cfg.DependencyPing = -1
	if o.SessionCacheTTL > 0 {
		cfg.SessionCacheTTL = o.SessionCacheTTL
	}
	if o.RedisAddr != "" {
		rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{o.RedisAddr}, PoolSize: 64, ReadTimeout: o.RedisReadTimeout})
		e.T.Cleanup(func() { rdb.Close() })
		g := redis.New(rdb, e.Prefix)
		// Like every process at start: admission runs EVALSHA from the
		// first request.
		if err := g.Load(context.Background()); err != nil {
			e.T.Fatalf("redis at %s: %v", o.RedisAddr, err)
		}
		gate, cfg.Limiter = g, redis.NewLimiter(rdb, e.Prefix)
	}
	if o.WrapGate != nil {
		gate = o.WrapGate(gate)
	}
	var flow app.APIFlow = e.Orders
	if o.WrapFlow != nil {
		flow = o.WrapFlow(flow)
	}
	if o.Logger != nil {
		cfg.Logger = o.Logger
	}
	srv, err := app.NewAPI(cfg, o.Starter, store, gate, flow)
	if err != nil {
		e.T.Fatalf("api: %v", err)
	}
	e.API = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.T.Fatalf("listen: %v", err)
	}
	app := srv.App()
	bg, stop := context.WithCancel(context.Background())
	e.T.Cleanup(stop)
	srv.Start(bg)
	go func() { _ = app.Listener(ln) }()
	e.BaseURL = "http://" + ln.Addr().String()
	e.Provider.APIBase = e.BaseURL
	e.T.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = app.ShutdownWithContext(ctx)
		srv.Shutdown(ctx)
	})
}

// Session creates a session on sale from now for an hour and preheats it.
func (e *Env) Session(stock, perUserLimit int, priceCents int64) *seckill.Session {
	e.T.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Priced in a currency of its own, as every sale is since the create
	// fills in the deployment's.
	s := &seckill.Session{SKUID: 42, Title: "test sale", PriceCents: priceCents, Currency: "usd", TotalStock: stock,
		PerUserLimit: perUserLimit, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
	ctx := context.Background()
	if err := e.DB.CreateSession(ctx, s, nil); err != nil {
		e.T.Fatalf("create session: %v", err)
	}
	if _, err := e.Gate.Preheat(ctx, s.ID, stock); err != nil {
		e.T.Fatalf("preheat: %v", err)
	}
	return s
}

// Token returns a shopper token for user.
func (e *Env) Token(user int64) string {
	tok, err := auth.IssueToken(JWTSecret, user, time.Hour, time.Now())
	if err != nil {
		e.T.Fatalf("token: %v", err)
	}
	return tok
}

// Reconcile returns the reconcile report of a session.
func (e *Env) Reconcile(sessionID int64) *seckill.Report {
	e.T.Helper()
	r, err := seckill.Reconcile(context.Background(), e.DB, e.Gate, sessionID)
	if err != nil {
		e.T.Fatalf("reconcile: %v", err)
	}
	return r
}

// RequireInvariants fails the test unless every invariant of the design
// holds for the session and no reservation is still in flight.
func (e *Env) RequireInvariants(sessionID int64) *seckill.Report {
	e.T.Helper()
	r := e.Reconcile(sessionID)
	if !r.OK || r.InFlight != 0 {
		e.T.Fatalf("invariants broken for session %d: in_flight=%d problems=%v report=%+v", sessionID, r.InFlight, r.Problems, r)
	}
	e.requireOneRefundEach(sessionID)
	return r
}

// requireOneRefundEach checks that every refunded payment of the session
// (a late payment, a duplicate, or a paid order an operator refunded) has
// exactly one refund at the provider, of its amount, and that the provider
// refunded no payment of the session that is not refunded in MySQL (the
// captured payment of a PAID order above all). The provider keeps one
// refund per payment id (its idempotency key), so a second refund would be
// one under another key: a payment of the session it does not know.
func (e *Env) requireOneRefundEach(sessionID int64) {
	e.T.Helper()
	pays, err := e.DB.SessionPayments(context.Background(), sessionID)
	if err != nil {
		e.T.Fatalf("payments of session %d: %v", sessionID, err)
	}
	made := e.ProviderRefunds()
	orders := map[string]bool{}
	for _, p := range pays {
		orders[p.OrderNo] = true
		r, refunded := made[p.PaymentID]
		switch {
		case p.State == "refunded" && !refunded:
			e.T.Fatalf("payment %s of order %s is REFUNDED in MySQL (refund %s) but the provider made no refund", p.PaymentID, p.OrderNo, p.RefundID)
		case p.State == "refunded" && r.AmountCents != p.AmountCents:
			e.T.Fatalf("payment %s: refunded %d cents, paid %d", p.PaymentID, r.AmountCents, p.AmountCents)
		case p.State == "captured" && refunded:
			// (A pending refund the provider made is a run between its
			// two steps: MarkRefunded follows.)
			e.T.Fatalf("payment %s pays order %s but the provider refunded it", p.PaymentID, p.OrderNo)
		}
	}
	for id, r := range made {
		if orders[r.OrderNo] && !slices.ContainsFunc(pays, func(p seckill.RefundState) bool { return p.PaymentID == id }) {
			e.T.Fatalf("the provider refunded %s for order %s, a payment MySQL does not know", id, r.OrderNo)
		}
	}
}

// Eventually polls cond until it returns nil or the timeout passes.
func (e *Env) Eventually(timeout time.Duration, what string, cond func() error) {
	e.T.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.T.Fatalf("%s: still not true after %s: %v", what, timeout, err)
}
