package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
)

// A payment provider plugged in by configuration alone: a worker process
// with SECKILL_PAYMENT_PROVIDER=http refunds a late payment through the
// team's adapter (signed request, the payment id as Idempotency-Key),
// retrying through the adapter's outage, once; the order ends REFUNDED.
func TestRefundThroughAConfiguredProvider(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, PayTimeout: 2 * time.Second})
	secret := []byte("the-adapters-shared-secret")
	adapter := testenv.StartPaymentAdapter(t, secret)
	e.ProviderRefunds = func() map[string]seckill.Refund { refunds, _ := adapter.Refunds(); return refunds }
	adapter.Answer = func(n int) (int, string) {
		if n == 1 {
			return http.StatusServiceUnavailable, "provider down"
		}
		return 0, ""
	}
	e.Spawn(e.ProcessEnv("SECKILL_PAYMENT_PROVIDER=http", "SECKILL_PAYMENT_REFUND_URL="+adapter.RefundURL,
		"SECKILL_PAYMENT_PROVIDER_SECRET="+string(secret)), "worker")

	sess := e.Session(2, 1, 700)
	ctx := context.Background()
	tok := e.Token(1)
	no := buyAndLetClose(t, e, sess.ID, tok)
	pay := fmt.Sprintf("pay-late-http-%d", time.Now().UnixNano())
	code, err := e.Provider.Pay(ctx, seckill.Payment{PaymentID: pay, OrderNo: no, AmountCents: 700})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	e.WaitStatus(tok, no, 90*time.Second, seckill.StatusRefunded)

	refunds, asks := adapter.Refunds()
	require.Equal(t, map[string]seckill.Refund{pay: {PaymentID: pay, OrderNo: no, AmountCents: 700, TraceID: refunds[pay].TraceID}}, refunds)
	require.GreaterOrEqual(t, asks, 2, "the outage was retried")
	require.Empty(t, e.Provider.Refunds(), "nothing went to the sandbox")
	e.RequireInvariants(sess.ID)
}

// buyAndLetClose buys one unit as tok's shopper and waits until the order
// is CLOSED unpaid and its workflow has ended: a payment now is late. The
// order's worker process may still be starting: with a 2 s deadline from
// the 202 the order can close the moment its row exists.
func buyAndLetClose(t *testing.T, e *testenv.Env, sessionID int64, tok string) string {
	t.Helper()
	no := buyOrder(t, e, sessionID, tok)
	e.WaitStatus(tok, no, 30*time.Second, seckill.StatusClosed)
	ctx := context.Background()
	require.NoError(t, e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(no), "").Get(ctx, nil))
	return no
}
