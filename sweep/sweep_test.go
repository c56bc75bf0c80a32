package sweep_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/payments"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/sweep"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/workflows"
)

// later is the sweep's clock in these tests: 20 minutes ahead, so orders
// with the production pay timeout (15m) are past deadline + grace while
// their workflows, if any, still run.
func later() time.Time { return time.Now().Add(20 * time.Minute) }

func newSweep(e *testenv.Env, wf sweep.Workflows) *sweep.Sweep {
	return &sweep.Sweep{Store: e.DB, Gate: e.Gate, Workflows: wf, Steps: e.Activities(),
		PayTimeout: seckill.DefaultPayTimeout, Grace: time.Minute, Log: e.Log, Now: later}
}

// reserve runs the admission script for user, as the API does.
func reserve(t *testing.T, e *testenv.Env, s *seckill.Session, user int64) *seckill.OrderRequest {
	t.Helper()
	no := fmt.Sprintf("%d-sw%d-%d", s.ID, user, time.Now().UnixNano())
	r, _, err := e.Gate.Admit(context.Background(), s, user, 1, no, fmt.Sprintf("trace-%d", user), time.Now())
	require.NoError(t, err)
	r.SKUID = s.SKUID
	return &seckill.OrderRequest{Reservation: *r, PriceCents: s.PriceCents, PayTimeout: seckill.DefaultPayTimeout}
}

// start starts the order's workflow, as the API does, and waits for WAIT_PAY.
func start(t *testing.T, e *testenv.Env, req *seckill.OrderRequest) {
	t.Helper()
	ctx := context.Background()
	started, err := e.Orders.Start(ctx, req)
	require.NoError(t, err)
	require.True(t, started)
	require.NoError(t, e.Gate.Started(ctx, req.SessionID, req.OrderNo))
	waitRow(e, req.OrderNo, seckill.StatusWaitPay)
}

func waitRow(e *testenv.Env, orderNo string, want seckill.Status) {
	e.T.Helper()
	e.Eventually(20*time.Second, orderNo+" "+string(want), func() error {
		o, err := e.DB.Order(context.Background(), orderNo)
		if err != nil {
			return err
		}
		if o.Status != want {
			return fmt.Errorf("status %s", o.Status)
		}
		return nil
	})
}

type ledgerEntry struct{ From, To, Reason, TraceID string }

func ledger(t *testing.T, e *testenv.Env, orderNo string) []ledgerEntry {
	t.Helper()
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query("SELECT from_status, to_status, reason, trace_id FROM order_ledger WHERE order_no = ? ORDER BY id", orderNo)
	require.NoError(t, err)
	defer rows.Close()
	var out []ledgerEntry
	for rows.Next() {
		var l ledgerEntry
		require.NoError(t, rows.Scan(&l.From, &l.To, &l.Reason, &l.TraceID))
		out = append(out, l)
	}
	require.NoError(t, rows.Err())
	return out
}

// Orders whose workflow is gone are closed exactly as the workflow would
// have: a WAIT_PAY order whose workflow was terminated, and a reservation
// whose workflow never started (the API died, no relay ran), and an order
// whose workflow died between its close and its Redis release. Stock comes
// back in MySQL and Redis once, however many passes run; a running
// workflow past its deadline and a paid order are left alone (the paid
// order's lost cached view is written again).
func TestSweepClosesOrdersWhoseWorkflowIsGone(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(6, 1, 300)
	ctx := context.Background()

	terminated := reserve(t, e, sess, 1)
	start(t, e, terminated)
	require.NoError(t, e.Temporal.TerminateWorkflow(ctx, temporal.WorkflowID(terminated.OrderNo), "", "ops: by mistake"))

	queued := reserve(t, e, sess, 2) // testenv.LoseStarts' case: the start is lost, no relay runs

	halfClosed := reserve(t, e, sess, 5)
	start(t, e, halfClosed)
	require.NoError(t, e.Temporal.TerminateWorkflow(ctx, temporal.WorkflowID(halfClosed.OrderNo), "", "worker lost mid-compensation"))
	_, gave, err := e.DB.CloseOrder(ctx, halfClosed, workflows.ReasonTimeout) // the CloseOrder step ran, the release did not
	require.NoError(t, err)
	require.True(t, gave)
	o, err := e.DB.Order(ctx, halfClosed.OrderNo)
	require.NoError(t, err)
	require.NoError(t, e.Gate.PutOrder(ctx, o))

	running := reserve(t, e, sess, 3)
	start(t, e, running)

	paid := reserve(t, e, sess, 4)
	start(t, e, paid)
	require.NoError(t, e.Orders.Pay(ctx, &seckill.Payment{EventID: "e4", PaymentID: "p4", OrderNo: paid.OrderNo, AmountCents: 300, TraceID: "t4"}))
	waitRow(e, paid.OrderNo, seckill.StatusPaid)
	// The payment's step writes the view after the row: its workflow's end
	// says the view is written, so the delete below is not overwritten.
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(paid.OrderNo), "").Get(ctx, nil))
	// Its cached view is gone, as after Redis was rebuilt from MySQL.
	require.NoError(t, e.Redis.HDel(ctx, fmt.Sprintf("%s:{s%d}:orders", e.Prefix, sess.ID), paid.OrderNo, paid.OrderNo+":v").Err())

	// Reconcile 20 minutes from now: three orders stuck, not ok.
	policy := seckill.ReconcilePolicy{Now: later}
	rep, err := policy.Reconcile(ctx, e.DB, e.Gate, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 4, rep.StuckOrders, "%+v", rep)
	require.False(t, rep.OK)

	sw := newSweep(e, e.Orders)
	st, err := sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{Closed: 1, Queued: 1, Released: 1, Running: 1, Refreshed: 1}, st)
	st, err = sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{Running: 1}, st, "a second pass finds nothing more to close or refresh")
	view, err := e.Gate.Order(ctx, paid.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusPaid, view.Status)

	for _, no := range []string{terminated.OrderNo, queued.OrderNo} {
		o, err := e.DB.Order(ctx, no)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusClosed, o.Status)
		view, err := e.Gate.Order(ctx, no)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusClosed, view.Status, "the cached view follows the row")
		l := ledger(t, e, no)
		last := l[len(l)-1]
		require.Equal(t, ledgerEntry{To: "CLOSED", Reason: sweep.Reason, TraceID: o.TraceID, From: last.From}, last)
		require.NotEmpty(t, last.TraceID)
	}
	require.Equal(t, "WAIT_PAY", ledger(t, e, terminated.OrderNo)[1].From)
	require.Len(t, ledger(t, e, queued.OrderNo), 1, "a reservation that never became an order gets one CLOSED row")
	o, err = e.DB.Order(ctx, running.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status, "a running workflow is never touched")

	rep, err = policy.Reconcile(ctx, e.DB, e.Gate, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 1, rep.StuckOrders, "only the order whose workflow runs (its timer is late)")
	rep = e.RequireInvariants(sess.ID)
	require.Equal(t, 4, rep.DBStock, "the closed orders' units back in MySQL, once")
	require.Equal(t, 4, rep.RedisStock, "the closed orders' units back in Redis, once")
	require.Equal(t, map[seckill.Status]int{seckill.StatusClosed: 3, seckill.StatusWaitPay: 1, seckill.StatusPaid: 1}, rep.Orders)
}

// lostWorkflows claims every workflow is gone: a sweep that raced the
// workflow's comeback (Temporal answered "not found" just before the
// workflow was recovered).
type lostWorkflows struct{}

func (lostWorkflows) Running(context.Context, string) (bool, error) { return false, nil }

// A sweep racing a workflow that comes back: both close the order, the
// compare-and-set lets one give the stock back, the Redis release runs once.
func TestSweepRacingAWorkflowGivesBackOnce(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(3, 1, 300)
	ctx := context.Background()
	req := reserve(t, e, sess, 1)
	req.PayTimeout = 3 * time.Second
	start(t, e, req)

	sw := newSweep(e, lostWorkflows{})
	sw.Metrics = metrics.New()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go sw.Run(runCtx, 50*time.Millisecond)
	e.Eventually(10*time.Second, "swept", func() error {
		if n := testutil.ToFloat64(sw.Metrics.SweepActions.WithLabelValues("closed")); n != 1 {
			return fmt.Errorf("seckill_sweep_actions_total{action=closed} = %v", n)
		}
		return nil
	})

	// The workflow's own timer fires and it compensates: nothing left to give.
	var state workflows.OrderState
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(req.OrderNo), "").Get(ctx, &state))
	require.Equal(t, seckill.StatusClosed, state.Status)
	closes := 0
	for _, l := range ledger(t, e, req.OrderNo) {
		if l.To == "CLOSED" {
			closes++
			require.Equal(t, sweep.Reason, l.Reason)
		}
	}
	require.Equal(t, 1, closes, "one close, by the sweep")
	stop()
	require.Equal(t, 1.0, testutil.ToFloat64(sw.Metrics.SweepActions.WithLabelValues("closed")), "later passes close nothing")
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 3, rep.DBStock)
	require.Equal(t, 3, rep.RedisStock)
}

// silentProvider cannot say anything about a payment while down is set;
// up, it holds none.
type silentProvider struct {
	*sandbox.Provider
	down  *atomic.Bool
	asked *atomic.Int32
}

func (p silentProvider) QueryPayment(context.Context, seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.asked.Add(1)
	if p.down.Load() {
		return seckill.ProviderPayment{}, errors.New("provider: connection refused")
	}
	return seckill.ProviderPayment{State: seckill.PaymentNone}, nil
}

// The sweep closes a WAIT_PAY order whose workflow is gone the way the
// workflow would: it asks the payment provider first, and the provider's
// grace counts from when the sweep could first close it (the order's
// deadline plus the sweep's grace), not from the start of time. A provider
// that cannot answer keeps the order open; once it says "no payment", the
// order closes and its units come back once.
func TestSweepAsksTheProviderLikeTheWorkflow(t *testing.T) {
	var down atomic.Bool
	var asked atomic.Int32
	down.Store(true)
	e := testenv.New(t, testenv.Options{NoAPI: true, PayGrace: 2 * time.Minute,
		WrapPayments: func(p *sandbox.Provider) seckill.PaymentProvider { return silentProvider{p, &down, &asked} }})
	sess := e.Session(2, 1, 300)
	ctx := context.Background()
	req := reserve(t, e, sess, 1)
	start(t, e, req)
	require.NoError(t, e.DB.SaveCheckout(ctx, &seckill.Checkout{Provider: "sandbox", OrderNo: req.OrderNo,
		PaymentID: "pay-1", CheckoutURL: "https://pay.example/1", ExpiresAt: time.Now().Add(time.Hour)}))
	require.NoError(t, e.Temporal.TerminateWorkflow(ctx, temporal.WorkflowID(req.OrderNo), "", "worker lost"))

	// The sweep's clock is 20 minutes ahead; the provider's grace runs on
	// the real one, from deadline + sweep grace (16 minutes ahead).
	sw := newSweep(e, e.Orders)
	st, err := sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{Failed: 1}, st, "kept open: the provider could not say")
	require.Positive(t, asked.Load(), "the provider was asked")
	o, err := e.DB.Order(ctx, req.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status)

	down.Store(false)
	st, err = sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{Closed: 1}, st)
	waitRow(e, req.OrderNo, seckill.StatusClosed)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 2, rep.DBStock)
	require.Equal(t, 2, rep.RedisStock)
}

// An operator refunds a paid order while the refund's Redis is down: MySQL
// commits the refund (the unit back in its stock) and the API answers an
// error that nobody retries, so Redis still holds the unit for the order
// and its cached view still says PAID. The sweep gives the unit back to
// the sale, once: a later pass, and the refund's retry once Redis is
// back, find nothing left to give.
func TestSweepReleasesAnOperatorRefundRedisMissed(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(1, 1, 300)
	ctx := context.Background()
	req := reserve(t, e, sess, 1)
	start(t, e, req)
	require.NoError(t, e.Orders.Pay(ctx, &seckill.Payment{EventID: "e1", PaymentID: "p-" + req.OrderNo, OrderNo: req.OrderNo, AmountCents: 300, TraceID: "t1"}))
	waitRow(e, req.OrderNo, seckill.StatusPaid)

	link := testenv.StartToxi(t, "refund-redis", e.RedisAddr)
	rdb := redis.NewClient(&goredis.UniversalOptions{Addrs: []string{link.Addr}})
	t.Cleanup(func() { rdb.Close() })
	refund := &payments.Refund{Store: e.DB, Gate: redis.New(rdb, e.Prefix)}
	ch := func() *seckill.SessionChange {
		return &seckill.SessionChange{Action: seckill.ActionRefund, OrderNo: req.OrderNo, Reason: "customer cancelled",
			Actor: "alice", ActorRole: seckill.RoleOperator, RequestID: "refund-1", TraceID: "t-refund"}
	}
	link.SetDown(true)
	_, _, err := refund.Order(ctx, ch())
	require.Error(t, err, "Redis is down")
	o, err := e.DB.Order(ctx, req.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefundPending, o.Status, "MySQL committed the refund")
	rep := e.Reconcile(sess.ID)
	require.Equal(t, 1, rep.InFlight, "Redis still holds the refunded order's unit")
	require.Zero(t, rep.RedisStock)

	sw := newSweep(e, e.Orders)
	st, err := sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{Released: 1}, st)
	st, err = sw.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, sweep.Stats{}, st, "released once")
	view, err := e.Gate.Order(ctx, req.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefundPending, view.Status, "the cached view follows the row")

	link.SetDown(false)
	_, applied, err := refund.Order(ctx, ch())
	require.NoError(t, err)
	require.False(t, applied, "the retry is the same refund")
	rep = e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.RedisStock, "the unit back on sale in Redis, once")
	require.Equal(t, 1, rep.DBStock, "and in MySQL, once")
}
