package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal/starter"
)

// heldStarts holds every workflow start until the test lets them go: a
// Temporal that does not answer yet.
type heldStarts struct {
	app.APIFlow
	release chan struct{}
	mu      sync.Mutex
	done    int
}

func (f *heldStarts) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	select {
	case <-f.release:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	started, err := f.APIFlow.Start(ctx, req)
	f.mu.Lock()
	f.done++
	f.mu.Unlock()
	return started, err
}

func (f *heldStarts) finished() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// A winner's answer never waits for Temporal: with every start held, each
// winner still gets its 202 (the reservation and its pending-start entry
// are the durable intent), the order is QUEUED and held by the starter;
// once Temporal answers, every order reaches WAIT_PAY exactly once.
func TestWinnersNeverWaitForStarts(t *testing.T) {
	held := &heldStarts{release: make(chan struct{})}
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { held.APIFlow = f; return held },
		Starter: starter.Config{CallTimeout: time.Minute}})
	sess := e.Session(5, 1, 100)
	var orders []string
	for u := int64(1); u <= 3; u++ {
		shopper := e.Shopper(u)
		r, err := shopper.Buy(context.Background(), sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		no := r.OrderNo
		orders = append(orders, no)
		o, err := shopper.Order(context.Background(), no)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusQueued, o.Status)
		require.True(t, e.API.Starts.Holds(no), "the start is the starter's, after the answer")
	}
	require.Zero(t, held.finished(), "every 202 came back while its start was still pending")
	rep := e.Reconcile(sess.ID)
	require.Equal(t, 3, rep.PendingStarts)

	close(held.release)
	requireAllWaitPay(t, e, sess.ID, orders)
}

// A winner the starter's queue has no room for is not lost and not
// waited for: its pending-start entry is drained by the API's outbox relay
// a few seconds later, and every order reaches WAIT_PAY exactly once.
func TestOutboxDrainsDroppedHandoffs(t *testing.T) {
	held := &heldStarts{release: make(chan struct{})}
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { held.APIFlow = f; return held },
		Starter: starter.Config{Queue: 1, CallTimeout: time.Minute, Limit: &starter.Limit{Min: 1, Max: 1, Initial: 1}}})
	sess := e.Session(6, 1, 100)
	var orders []string
	for u := int64(1); u <= 6; u++ {
		r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(u), nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		orders = append(orders, r.Str("order_no"))
		if u == 1 {
			// The first start takes the only slot; the next one queues.
			e.Eventually(5*time.Second, "first start in flight", func() error {
				if n := e.API.Starts.InFlight(); n != 1 {
					return fmt.Errorf("in flight %d", n)
				}
				return nil
			})
		}
	}
	held2 := 0
	for _, no := range orders {
		if e.API.Starts.Holds(no) {
			held2++
		}
	}
	require.Equal(t, 2, held2, "one in flight, one queued, four left to the outbox")
	dropped := metricValue(e, `seckill_starter_dropped_total{starter="api"}`)
	require.Equal(t, "4", dropped)

	close(held.release)
	requireAllWaitPay(t, e, sess.ID, orders)
}

// requireAllWaitPay waits until every order (of users 1, 2, … in turn)
// reaches WAIT_PAY and no start is pending, then checks the invariants.
func requireAllWaitPay(t *testing.T, e *testenv.Env, sessionID int64, orders []string) {
	t.Helper()
	for i, no := range orders {
		e.WaitStatus(e.Token(int64(i+1)), no, 30*time.Second, seckill.StatusWaitPay)
	}
	e.Eventually(10*time.Second, "pending entries cleared", func() error {
		if n := e.Reconcile(sessionID).PendingStarts; n != 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	r := e.RequireInvariants(sessionID)
	require.Equal(t, len(orders), r.Orders[seckill.StatusWaitPay])
}

// metricValue returns the value of one series line of /metrics.
func metricValue(e *testenv.Env, series string) string {
	for _, l := range strings.Split(string(e.Do("GET", "/metrics", "", nil).Raw), "\n") {
		if strings.HasPrefix(l, series+" ") {
			return strings.TrimPrefix(l, series+" ")
		}
	}
	return "missing"
}

// A burst of 500 winners through the API: every order reaches WAIT_PAY
// through the starter (adaptive, many starts in flight), no start fails or
// times out, nothing is left pending, and the invariants hold.
func TestBurstOf500Winners(t *testing.T) {
	logs := &testenv.LogBuffer{}
	e := testenv.New(t, testenv.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	const stock = 500
	sess := e.Session(stock, 1, 100)
	wins, codes := burst(t, e, sess.ID, 1, stock+100, 1)
	require.Len(t, wins, stock, "%v", codes)
	e.Eventually(120*time.Second, "every order WAIT_PAY", func() error {
		r := e.Reconcile(sess.ID)
		if r.Orders[seckill.StatusWaitPay] != stock || r.PendingStarts != 0 {
			return fmt.Errorf("WAIT_PAY %d, pending starts %d", r.Orders[seckill.StatusWaitPay], r.PendingStarts)
		}
		return nil
	})
	for _, kind := range starter.FailureKinds {
		require.Equal(t, "0", metricValue(e, fmt.Sprintf(`seckill_workflow_start_failures_total{kind=%q}`, kind)), kind)
	}
	for _, l := range logs.Lines() {
		require.NotEqual(t, "workflow start failed; the order waits in the outbox for the next pass", l["msg"], "%v", l)
	}
	// Spot-check what a shopper sees.
	for _, w := range wins[:10] {
		e.WaitStatus(w.token, w.orderNo, 10*time.Second, seckill.StatusWaitPay)
	}
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, stock, r.Orders[seckill.StatusWaitPay])
	require.Zero(t, r.DBStock)
}
