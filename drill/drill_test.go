package drill_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/drill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
)

func config(e *testenv.Env) drill.Config {
	c := drill.Config{
		BaseURL: e.BaseURL, AdminToken: testenv.AdminToken, JWTSecret: testenv.JWTSecret,
		WebhookSecret: testenv.WebhookSecret, Stock: 20, PerUserLimit: 1, Users: 60, Tries: 2,
		PayRatio: 0.5, Settle: 90 * time.Second, IssueToken: api.IssueToken,
	}
	if testing.Verbose() {
		c.Progress = os.Stderr
	}
	return c
}

func requireOK(t *testing.T, e *testenv.Env, res *drill.Result, err error) {
	t.Helper()
	require.NoError(t, err)
	require.True(t, res.OK, "problems: %v\nresult: %+v", res.Problems, res)
	require.Equal(t, 20, res.Accepted)
	e.RequireInvariants(res.SessionID)
}

// The worker process is killed (SIGKILL) in the middle of a burst and a new
// one started: every accepted order reaches WAIT_PAY exactly once, and the
// rest of the sale (payments, cancels, a late payment) completes.
func TestDrillWorkerKilledMidBurst(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	first := e.Spawn(e.ProcessEnv(), "worker")
	c := config(e)
	c.DuringBurst = first.Kill
	c.AfterBurst = func() { e.Spawn(e.ProcessEnv(), "worker") }
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// MySQL is unreachable for a while during the burst (the worker's
// connections go through a toxiproxy that closes and severs them):
// admission goes on in Redis, the order activities fail and retry, and
// once MySQL is back every accepted order completes.
func TestDrillMySQLOutage(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	links := e.Links("worker")
	e.StartWorkerVia(links)
	c := config(e)
	c.DuringBurst = func() { links.MySQL.SetDown(true) }
	c.AfterBurst = func() {
		time.Sleep(3 * time.Second)
		links.MySQL.SetDown(false)
	}
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}

// Payment and the pay timeout race on many orders at once: each payment
// lands within ±150 ms of its order's deadline. Every order ends PAID, or
// CLOSED with its stock back (a payment that lost becomes REFUND_PENDING),
// never both and never neither; the invariants hold across all of them.
func TestDrillPaymentRacesTimeout(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	const n = 30
	sess := e.Session(n, 1, 100)
	type placed struct {
		no, token string
		deadline  time.Time
	}
	var orders []placed
	for u := int64(1); u <= n; u++ {
		tok := e.Token(u)
		r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		orders = append(orders, placed{no: r.Str("order_no"), token: tok})
	}
	for i := range orders {
		e.Eventually(20*time.Second, "WAIT_PAY", func() error {
			r := e.Do("GET", "/api/v1/orders/"+orders[i].no, orders[i].token, nil)
			d, err := time.Parse(time.RFC3339Nano, r.Str("pay_deadline"))
			if r.Str("status") != "WAIT_PAY" || err != nil {
				return fmt.Errorf("%s", r.Raw)
			}
			orders[i].deadline = d
			return nil
		})
	}
	var wg sync.WaitGroup
	stamp := time.Now().UnixNano()
	for i, o := range orders {
		jitter := time.Duration(rand.Int64N(int64(300*time.Millisecond))) - 150*time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(o.deadline.Add(jitter)))
			r := e.Pay(o.no, fmt.Sprintf("race-%d-%d", stamp, i), fmt.Sprintf("race-evt-%d-%d", stamp, i), 100)
			// 200, or 503 when the order's workflow had just ended and the
			// provider must retry: a provider retries until 200.
			for r.Status == http.StatusServiceUnavailable {
				time.Sleep(100 * time.Millisecond)
				r = e.Pay(o.no, fmt.Sprintf("race-%d-%d", stamp, i), fmt.Sprintf("race-evt-%d-%d", stamp, i), 100)
			}
			assert.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		}()
	}
	wg.Wait()
	outcomes := map[string]int{}
	for _, o := range orders {
		var st string
		e.Eventually(20*time.Second, "settled", func() error {
			st = e.Do("GET", "/api/v1/orders/"+o.no, o.token, nil).Str("status")
			if st == "PAID" || st == "REFUND_PENDING" {
				return nil
			}
			return fmt.Errorf("status %s", st)
		})
		outcomes[st]++
	}
	t.Logf("outcomes: %v", outcomes)
	e.Eventually(10*time.Second, "releases done", func() error {
		if r := e.Reconcile(sess.ID); r.InFlight != 0 {
			return fmt.Errorf("in flight %d", r.InFlight)
		}
		return nil
	})
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, outcomes["PAID"], rep.Orders["PAID"])
	require.Equal(t, n-outcomes["PAID"], rep.DBStock, "every order that did not end PAID gave its unit back")
	require.Equal(t, n-outcomes["PAID"], rep.RedisStock)
	require.Equal(t, outcomes["REFUND_PENDING"], rep.RefundsPending, "every payment that lost waits for its refund")
}

// The Temporal server (file-backed) is killed mid-burst and restarted:
// starts that failed meanwhile are picked up by the relay from the
// pending-start outbox, and nothing accepted is lost.
func TestDrillTemporalRestart(t *testing.T) {
	srv := testenv.StartTemporalServer(t)
	e := testenv.New(t, testenv.Options{TemporalAddr: srv.Addr})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	r := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: 15 * time.Minute, MinAge: time.Second, Log: e.Log}
	go r.Run(ctx, 500*time.Millisecond)
	c := config(e)
	c.DuringBurst = srv.Kill
	c.AfterBurst = srv.Start
	res, err := drill.Run(context.Background(), c)
	requireOK(t, e, res, err)
}
