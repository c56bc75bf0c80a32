package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// A sale order checked out with the stripe provider (on stripe-mock) is
// paid by Stripe's payment_intent.succeeded event, through the same intake
// as the seckill webhook: forged, stale and unsigned events are refused and
// change nothing, other event types are acknowledged and change nothing,
// replays answer 200 and change nothing.
func TestStripeWebhookPaysTheOrder(t *testing.T) {
	mock := testenv.StartStripeMock(t)
	e := testenv.New(t, testenv.Options{Configure: mock.Configure})
	sess := e.Session(2, 1, 990)
	tok := e.Token(1)
	no := buyWaitPay(t, e, sess.ID, tok)

	co := e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	require.Equal(t, "stripe", co.Str("provider"))
	pi := co.Str("payment_id")
	require.True(t, strings.HasPrefix(pi, "pi_"), pi)
	require.NotEmpty(t, co.Str("client_secret"), "the shop's Stripe.js page confirms with it")

	intent := map[string]any{"id": pi, "object": "payment_intent", "amount": 990, "amount_received": 990,
		"currency": "usd", "status": "succeeded", "metadata": map[string]string{"order_no": no}}
	paid := testenv.StripeEvent(t, "evt_paid", "payment_intent.succeeded", intent)
	send := func(b []byte, sig string) *testenv.Response {
		return e.Do("POST", "/api/v1/payments/stripe/webhook", "", b, api.HeaderStripeSignature, sig)
	}
	status := func() string { return e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status") }

	now := time.Now()
	testenv.RequireError(t, send(paid, ""), 401, "UNAUTHENTICATED", "Stripe-Signature")
	testenv.RequireError(t, send(paid, testenv.StripeSignature(paid, "whsec_forged", now)), 401, "UNAUTHENTICATED", "does not match")
	testenv.RequireError(t, send(paid, testenv.StripeSignature(paid, testenv.StripeWebhookSecret, now.Add(-6*time.Minute))), 401, "UNAUTHENTICATED", "tolerance")
	tampered := []byte(strings.Replace(string(paid), `"amount_received":990`, `"amount_received":1`, 1))
	testenv.RequireError(t, send(tampered, testenv.StripeSignature(paid, testenv.StripeWebhookSecret, now)), 401, "UNAUTHENTICATED", "does not match")
	signed := func(b []byte) *testenv.Response {
		return send(b, testenv.StripeSignature(b, testenv.StripeWebhookSecret, time.Now()))
	}
	noOrder := map[string]any{"id": "pi_other", "object": "payment_intent", "amount_received": 990, "status": "succeeded", "metadata": map[string]string{}}
	testenv.RequireError(t, signed(testenv.StripeEvent(t, "evt_foreign", "payment_intent.succeeded", noOrder)), 400, "INVALID_ARGUMENT", "order_no")
	testenv.RequireError(t, signed([]byte(`{"id":"evt_x","type":`)), 400, "INVALID_ARGUMENT", "")

	// Events of other types are acknowledged, so Stripe stops resending them.
	for _, typ := range []string{"payment_intent.created", "payment_intent.payment_failed", "charge.succeeded"} {
		r := signed(testenv.StripeEvent(t, "evt_"+typ, typ, intent))
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", typ, r.Raw)
		require.Equal(t, true, r.Body["received"])
	}
	require.Equal(t, "WAIT_PAY", status(), "refused and unrelated events changed nothing")

	r := signed(paid)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, true, r.Body["received"])
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	before := e.Do("GET", "/api/v1/orders/"+no, tok, nil)

	// Stripe resends an event until it has its 200, and may send the same
	// intent's success under another event id.
	require.Equal(t, http.StatusOK, signed(paid).Status)
	require.Equal(t, http.StatusOK, signed(testenv.StripeEvent(t, "evt_again", "payment_intent.succeeded", intent)).Status)
	after := e.Do("GET", "/api/v1/orders/"+no, tok, nil)
	require.Equal(t, before.Body, after.Body, "replays changed nothing")

	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Equal(t, 1, rep.DBStock)
}
