package capacity_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/capacity"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
)

// TestMeasure sells a small sale on servers of its own and measures what
// each admission and each order path costs them (see package capacity).
// scripts/capacity.sh runs it with more orders and a Temporal server whose
// metrics it can read, and keeps the report; run alone it is the check
// that the counts stay what docs/CAPACITY.md says.
//
// Env: SECKILL_CAPACITY_ORDERS (orders per path, 10),
// SECKILL_CAPACITY_PAY_TIMEOUT (30s: must outlast the admission, creation,
// payment and cancel phases), SECKILL_CAPACITY_TEMPORAL_METRICS (the
// Temporal server's /metrics URL; unset: no persistence counts),
// SECKILL_CAPACITY_OUT (a file prefix: writes <prefix>.json and .md).
func TestMeasure(t *testing.T) {
	testenv.SkipShort(t, "MariaDB, redis-server and the Temporal dev server")
	n := envInt(t, "SECKILL_CAPACITY_ORDERS", 10)
	payTimeout, err := time.ParseDuration(envOr("SECKILL_CAPACITY_PAY_TIMEOUT", "30s"))
	require.NoError(t, err)
	ctx := context.Background()

	redisAddr := startRedis(t)
	root, user := mysqlUser(t)
	t.Setenv("SECKILL_TEST_REDIS_ADDR", redisAddr)
	t.Setenv("SECKILL_TEST_MYSQL_DSN", user+":@tcp("+mysqlHost()+")/")
	// Production's limits, but the per-IP one (every shopper here is one
	// address): the per-user limit's script runs on every admission.
	// The global bucket stays off: it costs no server anything, but with it
	// on the API joins the fleet, whose heartbeat (a script a second) would
	// count as traffic of the sale.
	e := testenv.New(t, testenv.Options{NoWorker: true, PayTimeout: payTimeout, SessionCacheTTL: time.Second,
		Limits: api.Limits{User: 5}})

	// What the API and the worker send, next to what Redis runs.
	sent := capacity.NewRedisClient()
	e.Redis.AddHook(sent)
	probe := capacity.NewRedisProbe(redisAddr)
	t.Cleanup(func() { probe.C.Close() })
	m := &capacity.Meter{Sources: []capacity.Source{probe, sent, &capacity.MySQL{DB: root, User: user}}}
	if url := os.Getenv("SECKILL_CAPACITY_TEMPORAL_METRICS"); url != "" {
		m.Sources = append(m.Sources, &capacity.Temporal{URL: url})
	}
	// CPU: this process is the API, the worker and the shoppers' client;
	// the Temporal dev server's pid comes from scripts/capacity.sh.
	m.Sources = append(m.Sources, &capacity.Process{Label: "test", PID: os.Getpid()})
	if pid := envInt(t, "SECKILL_CAPACITY_TEMPORAL_PID", 0); pid != 0 {
		m.Sources = append(m.Sources, &capacity.Process{Label: "temporal", PID: pid})
	}
	read := func() capacity.Reading {
		t.Helper()
		r, err := m.Read(ctx)
		require.NoError(t, err)
		return r
	}
	const idleWindow = 5 * time.Second
	idle := func() map[string]capacity.Counts {
		t.Helper()
		r0 := read()
		time.Sleep(idleWindow)
		return capacity.Rate(r0, read())
	}
	// settle lets the last steps of a phase (a start after its answer, a
	// workflow's end after its last status, a release after a close)
	// finish before its reading, and Temporal's metrics, which it reports
	// once a second, catch up.
	settle := func() { time.Sleep(2 * time.Second) }

	// Back-to-back readings count nothing: the probes leave themselves
	// out (but for CPU time, which they do take).
	r0, r1 := read(), read()
	for server, c := range r1.By {
		for k, v := range c.Sub(r0.By[server]) {
			if k != "cpu_us" && k != "busy_us" {
				require.Zerof(t, v, "%s %s moved between two readings with nothing in between", server, k)
			}
		}
	}

	// One session, 3n winners and a unit left over, so it never sells out:
	// winners and limit losers both meet the admission script. Another,
	// of one unit, whose sold-out flag the API sets when it sells it.
	sess := e.Session(3*n+1, 1, 100)
	empty := e.Session(1, 1, 100)
	shoppers := make([]*client.Client, 3*n)
	for i := range shoppers {
		shoppers[i] = e.Shopper(int64(i + 1))
	}
	// Ten times as many: they cost so little CPU that fewer do not add up
	// to enough clock ticks.
	late := make([]*client.Client, 10*n)
	for i := range late {
		late[i] = e.Shopper(int64(1_000_000 + i))
	}
	lastBuyer := e.Shopper(999_999)
	last, err := lastBuyer.Buy(ctx, empty.ID, client.BuyOptions{})
	require.NoError(t, err)

	idleAPI := idle()
	rep := &capacity.Report{Date: time.Now().UTC().Format(time.RFC3339), Commit: os.Getenv("SECKILL_CAPACITY_COMMIT"),
		OrdersPerPath: n, PayTimeout: payTimeout.String(), Histories: map[string]capacity.HistoryCost{}}

	// Admissions of the paid and cancelled orders' shoppers one at a time
	// (exact counts: the gate coalesces concurrent admissions into one
	// script call), then of the timed-out orders' 32 at a time, as in a
	// burst. No worker runs: the phases hold the admission and the
	// workflow start only.
	orders := make([]string, 3*n)
	before := read()
	for i, s := range shoppers[:2*n] {
		acc, err := s.Buy(ctx, sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		orders[i] = acc.OrderNo
	}
	settle() // the starter starts the workflows after the answers
	rep.Phases = append(rep.Phases, capacity.Measure("admission_winner", 2*n, before, read(), idleAPI))
	before = read()
	concurrently(shoppers[2*n:], func(i int, s *client.Client) {
		acc, err := s.Buy(ctx, sess.ID, client.BuyOptions{})
		if assert.NoError(t, err) {
			orders[2*n+i] = acc.OrderNo
		}
	})
	settle()
	rep.Phases = append(rep.Phases, capacity.Measure("admission_winner_c32", n, before, read(), idleAPI))
	require.NotContains(t, orders, "")

	before = read()
	for _, s := range shoppers {
		_, err := s.Buy(ctx, sess.ID, client.BuyOptions{})
		require.Equal(t, 409, client.StatusCode(err), "a second unit for a shopper with limit 1: %v", err)
	}
	rep.Phases = append(rep.Phases, capacity.Measure("admission_loser_script", 3*n, before, read(), idleAPI))

	// The same losers again, 32 at a time, as in a burst: the gate
	// coalesces their admissions into fewer script calls (the per-user
	// limit's script still runs once each).
	before = read()
	concurrently(shoppers, func(i int, s *client.Client) {
		_, err := s.Buy(ctx, sess.ID, client.BuyOptions{})
		assert.Equal(t, 409, client.StatusCode(err), "shopper %d's third request: %v", i+1, err)
	})
	rep.Phases = append(rep.Phases, capacity.Measure("admission_loser_script_c32", 3*n, before, read(), idleAPI))

	before = read()
	for _, s := range late {
		_, err := s.Buy(ctx, empty.ID, client.BuyOptions{})
		var ce *client.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 409, ce.StatusCode, "a loser after the sell-out: %v", err)
		require.Equal(t, api.LayerSoldOutMemory, ce.Layer())
	}
	rep.Phases = append(rep.Phases, capacity.Measure("admission_loser_soldout_flag", len(late), before, read(), idleAPI))

	// The worker creates the 3n orders; their Temporal starts were
	// counted with the admissions.
	before = read()
	e.StartWorker()
	waitStatus(t, root, e, append([]string{last.OrderNo}, orders...), seckill.StatusWaitPay, payTimeout)
	settle()
	created := read()
	// The one-unit session's order goes (its shopper cancels it) before
	// the idle window.
	_, err = lastBuyer.Cancel(ctx, last.OrderNo)
	require.NoError(t, err)
	waitStatus(t, root, e, []string{last.OrderNo}, seckill.StatusClosed, payTimeout)
	settle()
	idleAll := idle()
	rep.Phases = append(rep.Phases, capacity.Measure("create", 3*n+1, before, created, idleAll))

	paid, cancelled, timedOut := orders[:n], orders[n:2*n], orders[2*n:]
	before = read()
	for _, no := range paid {
		require.Equal(t, 200, e.Pay(no, "pay-"+no, "evt-"+no, 100).Status)
	}
	waitStatus(t, root, e, paid, seckill.StatusPaid, payTimeout)
	settle()
	rep.Phases = append(rep.Phases, capacity.Measure("paid", n, before, read(), idleAll))

	before = read()
	for i, no := range cancelled {
		_, err := shoppers[n+i].Cancel(ctx, no)
		require.NoError(t, err)
	}
	waitStatus(t, root, e, cancelled, seckill.StatusClosed, payTimeout)
	settle()
	rep.Phases = append(rep.Phases, capacity.Measure("cancel", n, before, read(), idleAll))

	closed := countStatus(t, root, e, timedOut, seckill.StatusClosed)
	require.Zerof(t, closed, "orders timed out before their phase: raise SECKILL_CAPACITY_PAY_TIMEOUT (%s)", payTimeout)
	before = read()
	waitStatus(t, root, e, timedOut, seckill.StatusClosed, 2*payTimeout)
	settle()
	rep.Phases = append(rep.Phases, capacity.Measure("timeout", n, before, read(), idleAll))

	// The hottest read after admission: a shopper polling an order (ten
	// polls per paid order, for enough clock ticks).
	before = read()
	for range 10 {
		for i, no := range paid {
			o, err := shoppers[i].Order(ctx, no)
			require.NoError(t, err)
			require.Equal(t, seckill.StatusPaid, o.Status)
		}
	}
	rep.Phases = append(rep.Phases, capacity.Measure("poll_order", 10*n, before, read(), idleAll))

	for path, nos := range map[string][]string{"paid": paid, "cancel": cancelled, "timeout": timedOut} {
		var cs []temporal.Cost
		for _, no := range nos {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			c, err := temporal.OrderCost(cctx, e.Temporal, no)
			cancel()
			require.NoError(t, err)
			cs = append(cs, c)
		}
		rep.Histories[path] = capacity.MeanCost(cs)
	}
	e.RequireInvariants(sess.ID)
	e.RequireInvariants(empty.ID)

	var md strings.Builder
	rep.Markdown(&md)
	t.Log("\n" + md.String())
	if out := os.Getenv("SECKILL_CAPACITY_OUT"); out != "" {
		js, err := json.MarshalIndent(rep, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(out+".json", js, 0o644))
		require.NoError(t, os.WriteFile(out+".md", []byte(md.String()), 0o644))
	}
	checkCounts(t, rep)
}

// checkCounts pins the counts that are deterministic, so they cannot move
// without docs/CAPACITY.md moving too; the idle traffic taken off leaves
// a few hundredths of noise.
func checkCounts(t *testing.T, rep *capacity.Report) {
	t.Helper()
	const noise = 0.1
	pin := func(phase, server, counter string, want float64) {
		t.Helper()
		p := rep.Phase(phase)
		require.NotNil(t, p, phase)
		assert.InDeltaf(t, want, p.Per[server][counter], noise, "%s: %s %s per unit", phase, server, counter)
	}
	// Every admission that reaches Redis runs two scripts: the per-user
	// limit and the admission; a loser after the sell-out none.
	pin("admission_winner", "redis", "cmd:evalsha", 2)
	pin("admission_loser_script", "redis", "cmd:evalsha", 2)
	pin("admission_loser_soldout_flag", "redis_client", "round_trips", 0)
	pin("admission_loser_soldout_flag", "mysql", "select_commands", 0)
	// Losers never reach MySQL; a winner's admission neither (the session
	// comes from memory, refreshed once a second per process).
	assert.Less(t, rep.Phase("admission_winner").Per["mysql"]["rows_inserted"], noise)
	// Rows: the order, its slot and a ledger row; a payment, a ledger row
	// and its order event; a ledger row, its event and the slot freed.
	pin("create", "mysql", "rows_inserted", 3)
	pin("paid", "mysql", "rows_inserted", 3)
	pin("cancel", "mysql", "rows_inserted", 2)
	pin("cancel", "mysql", "rows_deleted", 1)
	pin("timeout", "mysql", "rows_inserted", 2)
	pin("timeout", "mysql", "rows_deleted", 1)
	// A winner's admission is three round trips: the two scripts and the
	// starter clearing the pending-start entry after the start.
	pin("admission_winner", "redis_client", "round_trips", 3)
	pin("admission_loser_script", "redis_client", "round_trips", 2)
	// Polling an order is one Redis read, no MySQL.
	pin("poll_order", "redis", "cmd:hmget", 1)
	pin("poll_order", "redis_client", "round_trips", 1)
	pin("poll_order", "mysql", "select_commands", 0)
	// Temporal's billable actions per path (TestActionsPerOrder pins their kinds).
	assert.InDelta(t, 6, rep.Histories["paid"].Actions, 0.01)
	assert.InDelta(t, 6, rep.Histories["cancel"].Actions, 0.01)
	assert.InDelta(t, 5, rep.Histories["timeout"].Actions, 0.01)
}

// concurrently runs f for every shopper, 32 at a time.
func concurrently(shoppers []*client.Client, f func(i int, s *client.Client)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, s := range shoppers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i, s)
		}()
	}
	wg.Wait()
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	v, err := strconv.Atoi(envOr(name, strconv.Itoa(def)))
	require.NoError(t, err, name)
	return v
}

// mysqlHost is the host:port of SECKILL_TEST_MYSQL_DSN (user:pw@tcp(host)/).
func mysqlHost() string {
	dsn := envOr("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/")
	_, rest, _ := strings.Cut(dsn, "tcp(")
	host, _, _ := strings.Cut(rest, ")")
	return host
}

// mysqlUser creates a MySQL user of the test's own, turns MariaDB's user
// statistics on, and returns a root connection (whose queries are not
// that user's) and the user's name.
func mysqlUser(t *testing.T) (*sql.DB, string) {
	t.Helper()
	rootDSN := envOr("SECKILL_TEST_MYSQL_DSN", "root:@tcp(127.0.0.1:3306)/")
	root, err := sql.Open("mysql", rootDSN)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	require.NoError(t, root.Ping(), "MySQL at %s", rootDSN)
	user := fmt.Sprintf("capacity_%d", time.Now().UnixNano()%1_000_000_000)
	for _, q := range []string{
		"SET GLOBAL userstat = 1",
		"CREATE USER '" + user + "'@'%'",
		"GRANT ALL ON `seckill\\_test\\_%`.* TO '" + user + "'@'%'",
	} {
		_, err := root.Exec(q)
		require.NoError(t, err, q)
	}
	t.Cleanup(func() { _, _ = root.Exec("DROP USER '" + user + "'@'%'") })
	return root, user
}

// startRedis starts a redis-server of the test's own (no persistence) on
// a free loopback port: INFO's counters are server-wide.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "the capacity measurement needs redis-server on the PATH (apt-get install redis-server)")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--save", "", "--appendonly", "no", "--loglevel", "warning", "--logfile", filepath.Join(dir, "log"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return addr
		}
		require.Less(t, i, 100, "redis-server on %s did not answer", addr)
		time.Sleep(50 * time.Millisecond)
	}
}

// countStatus counts the orders in status, read as root (not counted).
func countStatus(t *testing.T, root *sql.DB, e *testenv.Env, orders []string, status seckill.Status) int {
	t.Helper()
	db := e.DSN[strings.Index(e.DSN, ")/")+2 : strings.Index(e.DSN, "?")]
	args := []any{string(status)}
	for _, no := range orders {
		args = append(args, no)
	}
	var n int
	q := "SELECT COUNT(*) FROM `" + db + "`.orders WHERE status = ? AND order_no IN (?" + strings.Repeat(",?", len(orders)-1) + ")"
	require.NoError(t, root.QueryRow(q, args...).Scan(&n))
	return n
}

func waitStatus(t *testing.T, root *sql.DB, e *testenv.Env, orders []string, status seckill.Status, timeout time.Duration) {
	t.Helper()
	e.Eventually(timeout, fmt.Sprintf("%d orders %s", len(orders), status), func() error {
		if got := countStatus(t, root, e, orders, status); got != len(orders) {
			return fmt.Errorf("%d of %d", got, len(orders))
		}
		return nil
	})
}
