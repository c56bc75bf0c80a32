package e2e_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// Stripe plugged in by configuration alone: a Stripe event paying an
// order that already closed is a late payment, and a worker process with
// SECKILL_PAYMENT_PROVIDER=stripe refunds it through Stripe (stripe-mock):
// one refund of the intent's amount, idempotent on refund:<payment_id>;
// the order ends REFUNDED.
func TestStripeLatePaymentIsRefunded(t *testing.T) {
	mock := testenv.StartStripeMock(t)
	e := testenv.New(t, testenv.Options{NoWorker: true, PayTimeout: 2 * time.Second, Configure: mock.Configure})
	e.ProviderRefunds = mock.Refunds
	e.Spawn(e.ProcessEnv(mock.Env()...), "worker")

	sess := e.Session(2, 1, 700)
	tok := e.Token(1)
	no := buyAndLetClose(t, e, sess.ID, tok)

	pi := fmt.Sprintf("pi_late%d", time.Now().UnixNano())
	event := testenv.StripeEvent(t, "evt_"+pi, "payment_intent.succeeded", map[string]any{"id": pi, "object": "payment_intent",
		"amount": 700, "amount_received": 700, "currency": "usd", "status": "succeeded", "metadata": map[string]string{"order_no": no}})
	r := e.Do("POST", "/api/v1/payments/stripe/webhook", "", event,
		api.HeaderStripeSignature, testenv.StripeSignature(event, testenv.StripeWebhookSecret, time.Now()))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	e.WaitStatus(tok, no, 90*time.Second, seckill.StatusRefunded)

	var refunds []testenv.StripeRequest
	for _, req := range mock.Requests() {
		if req.Path == "/v1/refunds" {
			refunds = append(refunds, req)
		}
	}
	require.NotEmpty(t, refunds)
	for _, req := range refunds {
		require.Equal(t, "refund:"+pi, req.IdempotencyKey)
		require.Equal(t, pi, req.Form.Get("payment_intent"))
		require.Equal(t, "700", req.Form.Get("amount"))
		require.Equal(t, no, req.Form.Get("metadata[order_no]"))
	}
	e.RequireInvariants(sess.ID)
}
