package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/workflows"
)

// Payable at once: a payment for an order that is still QUEUED (reserved in
// Redis, its workflow not started or its row not created) is accepted and
// applied. The webhook signals with start, so the payment never waits for
// the API's start or the relay; the three ways it can meet the start are
// each tested on the real services. Every delivery is sent twice, as a
// provider does: the duplicate changes nothing.

// buyQueued buys one unit as user and returns the order number; the answer
// says QUEUED.
func buyQueued(t *testing.T, e *testenv.Env, sessionID, user int64) (token, orderNo string) {
	t.Helper()
	token = e.Token(user)
	r, err := e.Client().WithToken(token).Buy(context.Background(), sessionID, client.BuyOptions{})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusQueued, r.Status)
	return token, r.OrderNo
}

// payTwice delivers one payment twice, as a provider retrying would; both
// deliveries must answer 200.
func payTwice(t *testing.T, e *testenv.Env, orderNo, paymentID string, amount int64) {
	t.Helper()
	for i := 0; i < 2; i++ {
		r := e.Pay(orderNo, paymentID, "evt-"+paymentID, amount)
		require.Equal(t, http.StatusOK, r.Status, "delivery %d: %s", i+1, r.Raw)
	}
}

// requirePaidOnce checks, once the order is PAID, that it has one workflow
// run, that no payment is left RECEIVED or waiting for a refund, that no
// start is pending, and the invariants (one payment per PAID order).
func requirePaidOnce(t *testing.T, e *testenv.Env, sessionID int64, tokens, orders []string) {
	t.Helper()
	ctx := context.Background()
	for i, no := range orders {
		e.WaitStatus(tokens[i], no, 20*time.Second, seckill.StatusPaid)
		// A paid order's workflow ends right after it records the payment.
		require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(no), "").Get(ctx, nil))
		e.Eventually(20*time.Second, "one run of "+no, func() error {
			resp, err := e.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: "default", Query: fmt.Sprintf("WorkflowId = '%s'", temporal.WorkflowID(no))})
			if err != nil {
				return err
			}
			if n := len(resp.GetExecutions()); n != 1 {
				return fmt.Errorf("%d runs", n)
			}
			return nil
		})
	}
	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, states, "no payment left RECEIVED, none to refund")
	rep := e.RequireInvariants(sessionID)
	require.Zero(t, rep.PendingStarts)
	require.Equal(t, len(orders), rep.Orders[seckill.StatusPaid])
}

// Before the start: the API never starts the workflow (its start is lost)
// and no relay runs. The webhook's signal-with-start starts it, and the
// order ends PAID at once, without the relay. A relay pass afterwards finds
// nothing to start. A payment of the wrong amount, first, never pays it
// but is refunded.
func TestPaymentBeforeTheStart(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapFlow: testenv.LoseStarts})
	sess := e.Session(3, 1, 250)
	tok, no := buyQueued(t, e, sess.ID, 1)
	require.Equal(t, 1, e.Reconcile(sess.ID).PendingStarts)
	ctx := context.Background()

	// The amount is still checked against the reservation's; the money,
	// captured all the same, is recorded and refunded.
	wrong := "pay-wrong-" + no
	testenv.RequireError(t, e.Pay(no, wrong, "evt-wrong-"+no, 249), 422, "AMOUNT_MISMATCH", "250")
	// An order nobody reserved is still unknown.
	testenv.RequireError(t, e.Pay(fmt.Sprintf("%d-0123456789abcdef", sess.ID), "pay-x-"+no, "evt-x-"+no, 250), 404, "NOT_FOUND", "")

	payTwice(t, e, no, "pay-"+no, 250)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	e.Eventually(10*time.Second, "the wrong amount waits for its refund", func() error {
		n, err := (&relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}).Pass(ctx)
		if err == nil && n != 1 {
			err = fmt.Errorf("%d refunds started", n)
		}
		return err
	})
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.RefundWorkflowID(wrong), "").Get(ctx, nil))
	require.Equal(t, int64(249), e.Provider.Refunds()[wrong].AmountCents)
	requirePaidOnce(t, e, sess.ID, []string{tok}, []string{no})

	rl := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: time.Minute, Log: e.Log}
	st, err := rl.Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, relay.Stats{}, st, "nothing left to start")
	payTwice(t, e, no, "pay-"+no, 250) // a late redelivery: a replay
	requirePaidOnce(t, e, sess.ID, []string{tok}, []string{no})
}

// gatedStarts holds the API's workflow starts: each waits for release
// before (or after) the real start, so a payment lands in the middle of it.
type gatedStarts struct {
	app.APIFlow
	after   bool // hold after the real start instead of before it
	release chan struct{}
	mu      sync.Mutex
	started map[string]bool // what the real start reported, per order
	done    atomic.Int32
}

func (g *gatedStarts) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	defer g.done.Add(1)
	if !g.after {
		<-g.release
	}
	started, err := g.APIFlow.Start(ctx, req)
	if err == nil {
		g.mu.Lock()
		g.started[req.OrderNo] = started
		g.mu.Unlock()
	}
	if g.after {
		<-g.release
	}
	return started, err
}

// During the start: the API's start is in flight (slow Temporal) when the
// payment comes. Held before it reaches Temporal, the payment's
// signal-with-start creates the workflow and the API's start then finds it
// (a duplicate detected, not doubled); held after it, the payment only
// signals the workflow the API started. Either way: one workflow, one
// payment, PAID.
func TestPaymentDuringTheStart(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := "payment before the API's start reaches Temporal"
		if after {
			name = "payment after the API's start reached Temporal"
		}
		t.Run(name, func(t *testing.T) {
			g := &gatedStarts{after: after, release: make(chan struct{}), started: map[string]bool{}}
			e := testenv.New(t, testenv.Options{
				WrapFlow: func(f app.APIFlow) app.APIFlow { g.APIFlow = f; return g }})
			sess := e.Session(3, 1, 300)
			tok, no := buyQueued(t, e, sess.ID, 1)
			if after {
				e.Eventually(10*time.Second, "API's start done", func() error {
					g.mu.Lock()
					defer g.mu.Unlock()
					if _, ok := g.started[no]; !ok {
						return fmt.Errorf("not yet")
					}
					return nil
				})
			}
			require.Zero(t, g.done.Load(), "the API's start is still in flight")

			payTwice(t, e, no, "pay-"+no, 300)
			close(g.release)
			e.Eventually(10*time.Second, "API's start returned", func() error {
				if g.done.Load() != 1 {
					return fmt.Errorf("in flight")
				}
				return nil
			})
			g.mu.Lock()
			require.Equal(t, after, g.started[no], "the start that came second is detected as a duplicate")
			g.mu.Unlock()
			payTwice(t, e, no, "pay-"+no, 300)
			requirePaidOnce(t, e, sess.ID, []string{tok}, []string{no})
		})
	}
}

// Racing the relay: the API's starts are lost, and a relay pass runs
// concurrently with the payments (each delivered twice, concurrently too)
// for every order. Whoever starts a workflow, the other finds it: one
// workflow per order, one payment, every order PAID.
func TestPaymentRacesTheRelay(t *testing.T) {
	const n = 6
	e := testenv.New(t, testenv.Options{WrapFlow: testenv.LoseStarts})
	sess := e.Session(n, 1, 120)
	tokens, orders := make([]string, n), make([]string, n)
	for i := range orders {
		tokens[i], orders[i] = buyQueued(t, e, sess.ID, int64(i+1))
	}
	require.Equal(t, n, e.Reconcile(sess.ID).PendingStarts)

	rl := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: time.Minute, Log: e.Log}
	var wg sync.WaitGroup
	var st relay.Stats
	var relayErr error
	codes := make(chan int, 2*n)
	start := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		st, relayErr = rl.Pass(context.Background())
	}()
	for _, no := range orders {
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				codes <- e.Pay(no, "pay-"+no, "evt-pay-"+no, 120).Status
			}()
		}
	}
	close(start)
	wg.Wait()
	close(codes)
	require.NoError(t, relayErr)
	t.Logf("relay: %+v", st)
	require.Zero(t, st.Failed)
	require.LessOrEqual(t, st.Started+st.Existed, n)
	for c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	requirePaidOnce(t, e, sess.ID, tokens, orders)
}

// countedStarts counts the payments delivered with signal-with-start.
type countedStarts struct {
	app.APIFlow
	n atomic.Int32
}

func (c *countedStarts) PayWithStart(ctx context.Context, req *seckill.OrderRequest, p *seckill.Payment) error {
	c.n.Add(1)
	return c.APIFlow.PayWithStart(ctx, req, p)
}

// A payment never starts the workflow of an order that has a row, even when
// the order's cached view is gone and the API sees it QUEUED (made from its
// reservation, which a PAID order keeps): after Temporal's retention such a
// start would make a second workflow. A second payment of a paid order
// whose view is lost is recorded for refund, the order stays PAID.
func TestPaymentNeverStartsAnOrderWithARow(t *testing.T) {
	c := &countedStarts{}
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { c.APIFlow = f; return c }})
	sess := e.Session(2, 1, 400)
	tok, no := buyQueued(t, e, sess.ID, 1)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	payTwice(t, e, no, "pay-"+no, 400)
	requirePaidOnce(t, e, sess.ID, []string{tok}, []string{no})

	ctx := context.Background()
	require.NoError(t, e.Redis.HDel(ctx, fmt.Sprintf("%s:{s%d}:orders", e.Prefix, sess.ID), no).Err())
	require.Equal(t, "QUEUED", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"), "the view is made from the reservation")
	before := c.n.Load()
	payTwice(t, e, no, "pay-2-"+no, 400)
	require.Equal(t, before, c.n.Load(), "no signal-with-start for an order with a row")
	o, err := e.DB.Order(ctx, no)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusPaid, o.Status)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.RefundsPending, "the second payment waits for its refund")
}

// The pay deadline counts from the shopper's 202, not from the workflow's
// start: a QUEUED order shows it already (it is payable), and the relay
// starting the order late leaves it where it was, in the row and in the
// workflow.
func TestPayDeadlineFromTheReservation(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapFlow: testenv.LoseStarts, PayTimeout: 10 * time.Minute})
	sess := e.Session(2, 1, 250)
	bought := time.Now()
	tok, no := buyQueued(t, e, sess.ID, 1)
	ctx := context.Background()
	queued, err := e.Client().WithToken(tok).Order(ctx, no)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusQueued, queued.Status)
	require.WithinDuration(t, bought.Add(10*time.Minute), queued.PayDeadline, 2*time.Second)

	time.Sleep(2 * time.Second) // the start comes late
	rl := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: 10 * time.Minute, Log: e.Log}
	st, err := rl.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Started)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	waiting, err := e.Client().WithToken(tok).Order(ctx, no)
	require.NoError(t, err)
	require.WithinDuration(t, queued.PayDeadline, waiting.PayDeadline, time.Second, "the row keeps the QUEUED order's deadline")
	var state workflows.OrderState
	v, err := e.Temporal.QueryWorkflow(ctx, temporal.WorkflowID(no), "", workflows.StateQuery)
	require.NoError(t, err)
	require.NoError(t, v.Get(&state))
	require.WithinDuration(t, queued.PayDeadline, state.PayDeadline, time.Second, "the workflow's timer counts to it")
	e.RequireInvariants(sess.ID)
}
