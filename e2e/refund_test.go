package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/workflows"
)

// buyOrder buys one unit of the session with the shopper's token through
// the API and returns the order number; the answer must be 202 Accepted.
func buyOrder(t *testing.T, e *testenv.Env, sessionID int64, tok string) string {
	t.Helper()
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sessionID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	return r.Str("order_no")
}

// Refunds: a late payment (after the order closed and its workflow ended)
// and a second payment of a paid order are each refunded exactly once
// through refund:<payment_id>; the late order ends REFUNDED, the paid one
// stays PAID with its one captured payment.
func TestLateAndDuplicatePaymentsAreRefunded(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	sess := e.Session(4, 1, 500)
	ctx := context.Background()
	late, paid := e.Token(1), e.Token(2)
	lateNo, paidNo := buyOrder(t, e, sess.ID, late), buyOrder(t, e, sess.ID, paid)
	// Payment ids are unique at a real provider; refund workflow ids
	// outlive the test database on a shared Temporal server.
	u := fmt.Sprint(time.Now().UnixNano())
	payOK, payTwice, payLate := "pay-ok-"+u, "pay-twice-"+u, "pay-late-"+u
	// Paid at once, QUEUED or not (payable from the 202), well within its
	// 2 s deadline.
	code, err := e.Provider.Pay(ctx, seckill.Payment{PaymentID: payOK, OrderNo: paidNo, AmountCents: 500})
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(paid, paidNo, 20*time.Second, seckill.StatusPaid)
	code, err = e.Provider.Pay(ctx, seckill.Payment{PaymentID: payTwice, OrderNo: paidNo, AmountCents: 500}) // the shopper paid twice
	require.NoError(t, err)
	require.Equal(t, 200, code)

	e.WaitStatus(late, lateNo, 20*time.Second, seckill.StatusClosed)
	// Wait for the order's workflow to end: the next payment takes the
	// API's direct path (no workflow to signal).
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(lateNo), "").Get(ctx, nil))
	code, err = e.Provider.Pay(ctx, seckill.Payment{PaymentID: payLate, OrderNo: lateNo, AmountCents: 500})
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(late, lateNo, 10*time.Second, seckill.StatusRefundPending)
	e.Eventually(10*time.Second, "duplicate payment recorded", func() error {
		if n, err := e.DB.PendingRefunds(ctx, 10); err != nil || len(n) != 2 {
			return fmt.Errorf("pending refunds %v %v", n, err)
		}
		return nil
	})

	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}
	n, err := refunds.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	n, err = refunds.Pass(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a refund is never started twice")
	for _, p := range []string{payLate, payTwice} {
		var res workflows.RefundResult
		require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.RefundWorkflowID(p), "").Get(ctx, &res))
		require.Equal(t, "re_"+p, res.RefundID)
	}
	got := e.Provider.Refunds()
	require.Len(t, got, 2)
	require.Equal(t, lateNo, got[payLate].OrderNo)
	require.Equal(t, paidNo, got[payTwice].OrderNo)
	e.WaitStatus(late, lateNo, 10*time.Second, seckill.StatusRefunded)
	require.Equal(t, "PAID", e.Do("GET", "/api/v1/orders/"+paidNo, paid, nil).Str("status"))
	pending, err := e.DB.PendingRefunds(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, pending)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusRefunded])
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Equal(t, 3, rep.DBStock)
}

// lostPayments is the seam for "the workflow never records a signalled
// payment" (its ApplyPayment gave up, or the run was terminated or lost
// with its history): the webhook's signal goes nowhere.
type lostPayments struct{ app.APIFlow }

func (lostPayments) Pay(context.Context, *seckill.Payment) error { return nil }

// lostRelaySignals is the same seam for the refund relay's own signals.
type lostRelaySignals struct{ *temporal.Orders }

func (lostRelaySignals) Pay(context.Context, *seckill.Payment) error { return nil }

// A payment the webhook accepted is never lost with its workflow: written
// as RECEIVED before the signal, it is settled by the refund relay once no
// workflow runs for the order — captured when the order still waits for it
// (its workflow was terminated in WAIT_PAY), refunded when the order closed.
// While the workflow runs, the relay leaves the payment to it.
func TestPaymentNoWorkflowRecordedIsSettled(t *testing.T) {
	// The lost run must still wait in WAIT_PAY when it is terminated: its
	// deadline counts from the 202, creation included.
	e := testenv.New(t, testenv.Options{PayTimeout: 8 * time.Second,
		WrapFlow: func(f app.APIFlow) app.APIFlow { return lostPayments{f} }})
	sess := e.Session(4, 1, 500)
	ctx := context.Background()
	lost, closed := e.Token(1), e.Token(2)
	lostNo, closedNo := buyOrder(t, e, sess.ID, lost), buyOrder(t, e, sess.ID, closed)
	e.WaitStatus(lost, lostNo, 20*time.Second, seckill.StatusWaitPay)
	e.WaitStatus(closed, closedNo, 20*time.Second, seckill.StatusWaitPay)
	u := fmt.Sprint(time.Now().UnixNano())
	payLost, payClosed := "pay-lost-"+u, "pay-closed-"+u
	require.Equal(t, 200, e.Pay(lostNo, payLost, "evt-"+payLost, 500).Status)
	require.Equal(t, 200, e.Pay(closedNo, payClosed, "evt-"+payClosed, 500).Status)

	refunds := &relay.Refunds{Store: e.DB, Starter: lostRelaySignals{e.Orders}, Views: e.Gate, Log: e.Log, ReceivedAge: time.Millisecond}
	_, err := refunds.Pass(ctx)
	require.NoError(t, err)
	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Len(t, states, 2)
	for _, st := range states {
		require.Equal(t, seckill.RefundReceived, st.State, "left to the running workflows: %+v", st)
	}

	// One run is lost in WAIT_PAY; the other times out and closes.
	require.NoError(t, e.Temporal.TerminateWorkflow(ctx, temporal.WorkflowID(lostNo), "", "test: the run is lost"))
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(closedNo), "").Get(ctx, nil))
	e.Eventually(20*time.Second, "both payments settled and the refund done", func() error {
		if _, err := refunds.Pass(ctx); err != nil {
			return err
		}
		if states, err := e.DB.RefundStates(ctx, 10); err != nil || len(states) != 0 {
			return fmt.Errorf("not settled: %+v %v", states, err)
		}
		return nil
	})
	e.WaitStatus(lost, lostNo, 10*time.Second, seckill.StatusPaid)
	e.WaitStatus(closed, closedNo, 10*time.Second, seckill.StatusRefunded)
	require.Contains(t, e.Provider.Refunds(), payClosed)
	require.NotContains(t, e.Provider.Refunds(), payLost)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Equal(t, 1, rep.Orders[seckill.StatusRefunded])
}

// flakyPayments fails the first signal of each payment as Temporal being
// unreachable would.
type flakyPayments struct {
	app.APIFlow
	mu     sync.Mutex
	failed map[string]bool
}

func (f *flakyPayments) Pay(ctx context.Context, p *seckill.Payment) error {
	f.mu.Lock()
	first := !f.failed[p.PaymentID]
	f.failed[p.PaymentID] = true
	f.mu.Unlock()
	if first {
		return seckill.Errorf(seckill.EUNAVAILABLE, "order service unavailable, retry shortly")
	}
	return f.APIFlow.Pay(ctx, p)
}

// The webhook writes the payment (RECEIVED) before it signals; when the
// signal fails the provider gets 503, and its redelivery is signalled again
// rather than answered as a replay: the order is paid once, with one
// payment row.
func TestWebhookRedeliveryAfterAFailedSignal(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow {
		return &flakyPayments{APIFlow: f, failed: map[string]bool{}}
	}})
	sess := e.Session(2, 1, 700)
	tok := e.Token(1)
	no := buyOrder(t, e, sess.ID, tok)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)

	pay := "pay-redeliver-" + fmt.Sprint(time.Now().UnixNano())
	testenv.RequireError(t, e.Pay(no, pay, "evt-"+pay, 700), 503, "UNAVAILABLE", "retry")
	states, err := e.DB.RefundStates(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, seckill.RefundReceived, states[0].State, "written before the signal")

	require.Equal(t, 200, e.Pay(no, pay, "evt-"+pay, 700).Status)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	require.Equal(t, 200, e.Pay(no, pay, "evt-"+pay, 700).Status, "a replay of an applied payment")
	states, err = e.DB.RefundStates(context.Background(), 10)
	require.NoError(t, err)
	require.Empty(t, states)
	e.RequireInvariants(sess.ID)
}

// A payment whose signal never reached its running workflow (the webhook
// wrote RECEIVED, then the signal was lost and the provider gave up) is
// signalled again by the refund relay: the order ends PAID, not closed at
// its timeout with the money refunded.
func TestReceivedPaymentIsSignalledAgain(t *testing.T) {
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { return lostPayments{f} }})
	sess := e.Session(1, 1, 500)
	ctx := context.Background()
	tok := e.Token(1)
	no := buyOrder(t, e, sess.ID, tok)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	pay := "pay-resignal-" + fmt.Sprint(time.Now().UnixNano())
	require.Equal(t, 200, e.Pay(no, pay, "evt-"+pay, 500).Status)
	require.Equal(t, "WAIT_PAY", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"), "the signal was lost")

	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Views: e.Gate, Log: e.Log, ReceivedAge: time.Millisecond}
	_, err := refunds.Pass(ctx)
	require.NoError(t, err)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, states, "nothing left RECEIVED or to refund")
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}
