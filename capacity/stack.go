package capacity

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	apiclient "github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/temporal/starter"
	"github.com/seckill/seckill/worker"
)

// stack is the measured seckill: the API and (from startWorker) the
// worker in this process, wired by internal/app as the binary wires them,
// on servers whose counters count nothing else: a redis-server of its
// own, a MariaDB user of its own, and the Temporal server it is given.
type stack struct {
	root      *sql.DB // a root connection: its queries are not the user's
	user      string  // the application's MySQL user
	dbName    string
	redisAddr string
	app       *app.Main
	api       *app.API
	baseURL   string
	secrets   secrets
	closers   []func() // undone by close, last first
}

type secrets struct{ jwt, webhook, admin, drawKey string }

// newStack starts everything but the worker. On error, nothing stays.
func newStack(ctx context.Context, cfg Config) (_ *stack, err error) {
	s := &stack{secrets: secrets{jwt: randomHex(32), webhook: randomHex(32), admin: randomHex(32), drawKey: randomHex(32)}}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.redisAddr, err = s.startRedis(ctx); err != nil {
		return nil, err
	}
	dsn, err := s.mysqlUser(ctx, cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	db, err := mysql.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{s.redisAddr}, PoolSize: 64})
	s.closers = append(s.closers, func() { rdb.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if cfg.Log != nil {
		log = slog.New(slog.NewTextHandler(cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	name := "capacity-" + randomHex(5)
	s.app = &app.Main{
		Config: &app.Config{RedisPrefix: name, TaskQueue: name, TemporalNamespace: "default", PaymentProvider: app.SandboxProvider,
			PayTimeout: cfg.PayTimeout, JWTSecret: s.secrets.jwt, WebhookSecret: s.secrets.webhook, AdminToken: s.secrets.admin,
			DrawKey: s.secrets.drawKey},
		DB: db, Redis: rdb, Gate: redis.New(rdb, name), Log: log, Sandbox: &sandbox.Provider{Secret: []byte(s.secrets.webhook)},
	}
	if err := s.app.OpenIdentity(); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.app.CloseIdentity)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tc, err := temporal.Dial(dctx, client.Options{HostPort: cfg.TemporalAddr, Namespace: "default"}, log, nil)
	if err != nil {
		return nil, err // it names the address and how to start a server
	}
	s.app.Temporal = tc
	s.closers = append(s.closers, tc.Close)
	if err := worker.CheckSearchAttributes(ctx, tc, "default"); err != nil {
		return nil, err
	}
	if err := s.startAPI(); err != nil {
		return nil, err
	}
	return s, nil
}

// startAPI serves the API on a loopback port with production's limits
// but the per-IP one (every shopper here is one address): the per-user
// limit's script runs on every admission. The global bucket stays off: it
// costs no server anything, but with it on the API joins the fleet, whose
// heartbeat (a script a second) would count as the sale's traffic; so do
// the dependency pings. The session cache keeps production's 1 s.
func (s *stack) startAPI() error {
	cfg := s.app.APIConfig(false)
	cfg.Limits = app.Limits{User: 5}
	cfg.SessionCacheTTL = time.Second
	cfg.DependencyPing = -1
	srv, err := app.NewAPI(cfg, starter.Config{}, s.app.DB, s.app.Gate, s.app.Orders())
	if err != nil {
		return err
	}
	s.api = srv
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fiberApp := srv.App()
	bg, stop := context.WithCancel(background(context.Background()))
	srv.Start(bg)
	go func() { _ = fiberApp.Listener(ln) }()
	s.baseURL = "http://" + ln.Addr().String()
	s.app.Provider().APIBase = s.baseURL
	s.closers = append(s.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = fiberApp.ShutdownWithContext(ctx)
		srv.Shutdown(ctx)
		stop()
	})
	return nil
}

// startsDone waits until the API's starter has started every winner's
// workflow and cleared its pending-start entry: on a loaded Temporal the
// paced starts outlast any fixed wait. It asks the starter in memory, so
// the wait adds nothing to the counts.
func (s *stack) startsDone(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for s.api.Starts.Queued() != 0 || s.api.Starts.InFlight() != 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("workflow starts not done after %s: %d queued, %d in flight", timeout, s.api.Starts.Queued(), s.api.Starts.InFlight())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// startWorker starts the order worker and the draw's, as `seckill worker`
// does.
func (s *stack) startWorker() error {
	for _, w := range []interface {
		Start() error
		Stop()
	}{s.app.Worker(), s.app.DrawWorker()} {
		if err := w.Start(); err != nil {
			return fmt.Errorf("start worker: %w", err)
		}
		s.closers = append(s.closers, w.Stop)
	}
	return nil
}

func (s *stack) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// session creates a first-come sale of stock units on sale from now for
// an hour, limit one per shopper, and preheats it.
func (s *stack) session(ctx context.Context, stock int) (*seckill.Session, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 42, Title: "capacity", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
	if err := s.app.DB.CreateSession(ctx, sess, nil); err != nil {
		return nil, err
	}
	_, err := s.app.Gate.Preheat(ctx, sess.ID, stock)
	return sess, err
}

var httpClient = apiclient.NewHTTPClient(30 * time.Second)

// client is a client of the API with the webhook's secret (it pays).
func (s *stack) client() *apiclient.Client {
	return &apiclient.Client{BaseURL: s.baseURL, HTTP: httpClient, AdminToken: s.secrets.admin, WebhookSecret: []byte(s.secrets.webhook)}
}

func (s *stack) shopper(user int64) (*apiclient.Client, error) {
	tok, err := auth.IssueToken([]byte(s.secrets.jwt), user, time.Hour, time.Now())
	return s.client().WithToken(tok), err
}

// checkInvariants fails unless every invariant holds for the session and
// no reservation is still in flight.
func (s *stack) checkInvariants(ctx context.Context, sessionID int64) error {
	r, err := seckill.Reconcile(ctx, s.app.DB, s.app.Gate, sessionID)
	if err != nil {
		return err
	}
	if !r.OK || r.InFlight != 0 {
		return fmt.Errorf("invariants broken for session %d: in_flight=%d problems=%v", sessionID, r.InFlight, r.Problems)
	}
	return nil
}

// countStatus counts the orders in status, read as root (not counted).
func (s *stack) countStatus(ctx context.Context, orders []string, status seckill.Status) (int, error) {
	args := []any{string(status)}
	for _, no := range orders {
		args = append(args, no)
	}
	var n int
	q := "SELECT COUNT(*) FROM `" + s.dbName + "`.orders WHERE status = ? AND order_no IN (?" + strings.Repeat(",?", len(orders)-1) + ")"
	err := s.root.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, err
}

// waitStatus waits until every order is in status.
func (s *stack) waitStatus(ctx context.Context, orders []string, status seckill.Status, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := s.countStatus(ctx, orders, status)
		if err == nil && n == len(orders) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d orders %s: still not after %s (%d are, %v)", len(orders), status, timeout, n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mysqlUser opens a root connection from rootDSN, turns MariaDB's user
// statistics on, creates a user of the measurement's own with a database
// of its own, and returns the user's DSN for that database.
func (s *stack) mysqlUser(ctx context.Context, rootDSN string) (string, error) {
	cfg, err := mysqldriver.ParseDSN(rootDSN)
	if err != nil {
		return "", fmt.Errorf("MySQL DSN: %w", err)
	}
	cfg.DBName = ""
	if s.root, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
		return "", err
	}
	s.closers = append(s.closers, func() { s.root.Close() })
	if err := s.root.PingContext(ctx); err != nil {
		return "", fmt.Errorf("MySQL at %s: %w", cfg.Addr, err)
	}
	s.user, s.dbName = "capacity_"+randomHex(5), "seckill_capacity_"+randomHex(5)
	pw := randomHex(16)
	for _, q := range []string{
		"SET GLOBAL userstat = 1",
		"CREATE USER '" + s.user + "'@'%' IDENTIFIED BY '" + pw + "'",
		"GRANT ALL ON `" + s.dbName + "`.* TO '" + s.user + "'@'%'",
	} {
		if _, err := s.root.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("%s (the measurement needs MySQL's root): %w", q, err)
		}
	}
	s.closers = append(s.closers, func() {
		_, _ = s.root.Exec("DROP DATABASE IF EXISTS `" + s.dbName + "`")
		_, _ = s.root.Exec("DROP USER '" + s.user + "'@'%'")
	})
	cfg.User, cfg.Passwd, cfg.DBName = s.user, pw, s.dbName
	return cfg.FormatDSN(), nil
}

// startRedis starts a redis-server of the measurement's own (no
// persistence) on a free loopback port: INFO's counters are server-wide.
func (s *stack) startRedis(ctx context.Context) (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("the capacity measurement needs redis-server on the PATH (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "seckill-capacity-redis-")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--loglevel", "warning", "--logfile", filepath.Join(dir, "log"))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	s.closers = append(s.closers, func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); os.RemoveAll(dir) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	for i := 0; c.Ping(ctx).Err() != nil; i++ {
		if i == 100 {
			return "", fmt.Errorf("redis-server on %s did not answer", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
