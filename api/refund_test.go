package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/workflows"
)

// Refunds: a late payment (after the order closed and its workflow ended)
// and a second payment of a paid order are each refunded exactly once
// through refund:<payment_id>; the late order ends REFUNDED, the paid one
// stays PAID with its one captured payment.
func TestLateAndDuplicatePaymentsAreRefunded(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	sess := e.Session(4, 1, 500)
	ctx := context.Background()
	late, paid := e.Token(1), e.Token(2)
	buy := func(tok string) string {
		r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		return r.Str("order_no")
	}
	lateNo, paidNo := buy(late), buy(paid)
	// Payment ids are unique at a real provider; refund workflow ids
	// outlive the test database on a shared Temporal server.
	u := fmt.Sprint(time.Now().UnixNano())
	payOK, payTwice, payLate := "pay-ok-"+u, "pay-twice-"+u, "pay-late-"+u
	e.WaitStatus(paid, paidNo, 20*time.Second, seckill.StatusWaitPay)
	code, err := e.Provider.Pay(ctx, paidNo, payOK, 500)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(paid, paidNo, 20*time.Second, seckill.StatusPaid)
	code, err = e.Provider.Pay(ctx, paidNo, payTwice, 500) // the shopper paid twice
	require.NoError(t, err)
	require.Equal(t, 200, code)

	e.WaitStatus(late, lateNo, 20*time.Second, seckill.StatusClosed)
	// Wait for the order's workflow to end: the next payment takes the
	// API's direct path (no workflow to signal).
	require.NoError(t, e.Temporal.GetWorkflow(ctx, seckill.WorkflowID(lateNo), "").Get(ctx, nil))
	code, err = e.Provider.Pay(ctx, lateNo, payLate, 500)
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
		require.NoError(t, e.Temporal.GetWorkflow(ctx, seckill.RefundWorkflowID(p), "").Get(ctx, &res))
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
