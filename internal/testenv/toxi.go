package testenv

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/toxi"
	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/temporal"
)

// Toxi is a toxiproxy proxy (package toxi), run in process, between the
// code under test and one real service (Redis, MySQL, the Temporal
// frontend), that a drill adds faults to while traffic flows. It ends with
// the test; a fault it cannot add fails the test.
type Toxi struct {
	*toxi.Link
	t testing.TB
}

// Stream directions of a toxic: Downstream is what the service sends back
// (replies), Upstream what the client sends (requests).
const (
	Downstream = toxi.Downstream
	Upstream   = toxi.Upstream
)

// StartToxi listens on a free loopback port and forwards to upstream
// (host:port) until the test ends.
func StartToxi(t testing.TB, name, upstream string) *Toxi {
	t.Helper()
	l, err := toxi.Start(name, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return &Toxi{Link: l, t: t}
}

func (x *Toxi) must(remove func(), err error) func() {
	x.t.Helper()
	if err != nil {
		x.t.Fatal(err)
	}
	return remove
}

// Latency delays every reply by d ± jitter (see toxi.Link.Latency).
func (x *Toxi) Latency(d, jitter time.Duration) (remove func()) {
	x.t.Helper()
	return x.must(x.Link.Latency(d, jitter))
}

// Stall drops every reply until removed (see toxi.Link.Stall).
func (x *Toxi) Stall() (remove func()) {
	x.t.Helper()
	return x.must(x.Link.Stall())
}

// ResetPeer resets every connection delay after it sends data (see
// toxi.Link.ResetPeer).
func (x *Toxi) ResetPeer(delay time.Duration) (remove func()) {
	x.t.Helper()
	return x.must(x.Link.ResetPeer(delay))
}

// SetDown takes the service away (true) or brings it back (false) on the
// same address.
func (x *Toxi) SetDown(down bool) {
	x.t.Helper()
	if err := x.Link.SetDown(down); err != nil {
		x.t.Fatal(err)
	}
}

// Links are one process's connections to the Env's services, each through
// a Toxi of its own: a drill slows the API's Redis without touching the
// worker's, and the test's own clients (Reconcile, RequireInvariants, the
// relay a test runs) never go through a fault.
type Links struct {
	Redis, MySQL, Temporal *Toxi
}

// Links starts a Toxi in front of each of the Env's services.
func (e *Env) Links(name string) *Links {
	e.T.Helper()
	cfg, err := mysqldriver.ParseDSN(e.DSN)
	if err != nil {
		e.T.Fatal(err)
	}
	return &Links{
		Redis:    StartToxi(e.T, name+"-redis", e.RedisAddr),
		MySQL:    StartToxi(e.T, name+"-mysql", cfg.Addr),
		Temporal: StartToxi(e.T, name+"-temporal", e.TemporalAddr),
	}
}

// Via returns the environment entries that send a process spawned with
// ProcessEnv(e.Via(l)...) to the services through l.
func (e *Env) Via(l *Links) []string {
	e.T.Helper()
	return []string{
		"SECKILL_REDIS_ADDR=" + l.Redis.Addr,
		"SECKILL_MYSQL_DSN=" + e.dsnVia(l.MySQL),
		"TEMPORAL_ADDRESS=" + l.Temporal.Addr,
	}
}

// dsnVia is the Env's DSN with the MySQL address of x.
func (e *Env) dsnVia(x *Toxi) string {
	e.T.Helper()
	cfg, err := mysqldriver.ParseDSN(e.DSN)
	if err != nil {
		e.T.Fatal(err)
	}
	cfg.Addr = x.Addr
	return cfg.FormatDSN()
}

// StartWorkerVia starts an in-process worker on the Env's task queue whose
// MySQL, Redis and Temporal connections all go through l.
func (e *Env) StartWorkerVia(l *Links) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db, err := mysql.Open(ctx, e.dsnVia(l.MySQL))
	if err != nil {
		e.T.Fatalf("mysql through %s: %v", l.MySQL.Name, err)
	}
	e.T.Cleanup(func() { db.Close() })
	// The product's client (its retry policy per command) with the
	// production timeouts, so faults meet what `seckill worker` would.
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{l.Redis.Addr}, PoolSize: 32,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	e.T.Cleanup(func() { rdb.Close() })
	gate := redis.New(rdb, e.Prefix)
	if err := gate.Load(ctx); err != nil {
		e.T.Fatalf("redis through %s: %v", l.Redis.Name, err)
	}
	tc, err := temporal.Dial(ctx, client.Options{HostPort: l.Temporal.Addr, Namespace: "default"}, e.Log, nil)
	if err != nil {
		e.T.Fatalf("temporal through %s: %v", l.Temporal.Name, err)
	}
	e.T.Cleanup(tc.Close)
	// Wired as every worker is, over the connections through l.
	via := &app.Main{Config: e.App.Config, DB: db, Redis: rdb, Gate: gate, Temporal: tc, Log: e.Log, Sandbox: e.Provider}
	w := via.Worker()
	if err := w.Start(); err != nil {
		e.T.Fatalf("start worker: %v", err)
	}
	e.T.Cleanup(w.Stop)
	e.Worker = w
}

// SpawnAPI starts `seckill api` as its own process on a free loopback port
// with env (ProcessEnv, plus Via for faults), the rate limits off (every
// shopper of a test comes from one address), and waits until it is ready.
// It returns the process and its base URL.
func (e *Env) SpawnAPI(env []string) (*Process, string) {
	e.T.Helper()
	addr := FreeAddr(e.T)
	env = append(append([]string{}, env...), "SECKILL_HTTP_ADDR="+addr,
		"SECKILL_LIMIT_IP_RPS=0", "SECKILL_LIMIT_USER_RPS=0", "SECKILL_LIMIT_GLOBAL_RPS=0", "SECKILL_LIMIT_READ_RPS=0")
	p := e.Spawn(env, "api")
	base := "http://" + addr
	e.Eventually(60*time.Second, "spawned API ready", func() error {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errStatus(resp.StatusCode)
		}
		return nil
	})
	return p, base
}

type errStatus int

func (s errStatus) Error() string { return "status " + strconv.Itoa(int(s)) }
