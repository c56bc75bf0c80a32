package api_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/signature"
)

// A sale order checked out with the stripe provider (on stripe-mock) is
// paid by Stripe's payment_intent.succeeded event, through the same intake
// as the seckill webhook: forged, stale and unsigned events are refused and
// change nothing, other event types are acknowledged and change nothing,
// replays answer 200 and change nothing.
func TestStripeWebhookPaysTheOrder(t *testing.T) {
	e, sess, tok, no, co := stripeCheckout(t)
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
	testenv.RequireError(t, signed([]byte(`{"id":"evt_x","type":`)), 400, "INVALID_ARGUMENT", "")

	// Events of other types, and intents seckill did not create (no order
	// number), are acknowledged, so Stripe stops resending them.
	noOrder := map[string]any{"id": "pi_other", "object": "payment_intent", "amount_received": 990, "status": "succeeded", "metadata": map[string]string{}}
	for typ, ev := range map[string][]byte{
		"payment_intent.created":           testenv.StripeEvent(t, "evt_created", "payment_intent.created", intent),
		"payment_intent.payment_failed":    testenv.StripeEvent(t, "evt_failed", "payment_intent.payment_failed", intent),
		"charge.succeeded":                 testenv.StripeEvent(t, "evt_charge", "charge.succeeded", intent),
		"another sale's intent, succeeded": testenv.StripeEvent(t, "evt_foreign", "payment_intent.succeeded", noOrder),
	} {
		r := signed(ev)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", typ, r.Raw)
		require.Equal(t, true, r.Body["received"])
	}
	// An amount that is not the order's never pays it, but was captured:
	// recorded, and refunded.
	wrong := map[string]any{"id": "pi_wrong", "object": "payment_intent", "amount_received": 1, "status": "succeeded", "metadata": map[string]string{"order_no": no}}
	testenv.RequireError(t, signed(testenv.StripeEvent(t, "evt_wrong", "payment_intent.succeeded", wrong)), 422, "AMOUNT_MISMATCH", "")
	requireRefundDue(t, e, "pi_wrong", 1)
	// So does the order's amount in another currency.
	yen := map[string]any{"id": "pi_yen", "object": "payment_intent", "amount_received": 990, "currency": "jpy", "status": "succeeded",
		"metadata": map[string]string{"order_no": no}}
	testenv.RequireError(t, signed(testenv.StripeEvent(t, "evt_yen", "payment_intent.succeeded", yen)), 422, "AMOUNT_MISMATCH", "990 jpy")
	requireRefundDue(t, e, "pi_yen", 990)
	// With Stripe as the provider the seckill-signed webhook pays nothing:
	// its route is not served.
	testenv.RequireError(t, e.Pay(no, pi, "evt_generic", 990), 404, "NOT_FOUND", "no route")
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

// stripeCheckout is a stack with the stripe provider (on stripe-mock) and
// a sale of 2 units at 9.90 whose user 1 bought one (tok) and opened its
// checkout (co) on order no.
func stripeCheckout(t *testing.T) (e *testenv.Env, sess *seckill.Session, tok, no string, co *testenv.Response) {
	t.Helper()
	mock := testenv.StartStripeMock(t)
	e = testenv.New(t, testenv.Options{Configure: mock.Configure})
	sess = e.Session(2, 1, 990)
	tok = e.Token(1)
	no = buyWaitPay(t, e, sess.ID, tok)
	co = e.Do("POST", "/api/v1/orders/"+no+"/payment", tok, nil)
	require.Equal(t, http.StatusCreated, co.Status, "%s", co.Raw)
	return e, sess, tok, no, co
}

// Stripe's events are whole objects, not the few hundred bytes of the
// API's other requests: a payment_intent.succeeded of an API version
// before 2022-11-15 carries the intent's charges (billing, card and risk
// details, the refunds list) and up to 50 metadata keys of 500 characters,
// on the intent and again on its charge. The Stripe route takes such an
// event; its own limit still refuses a body past it, and every other
// route keeps the API's limit (the seckill webhook included).
func TestStripeWebhookTakesAFullSizeEvent(t *testing.T) {
	e, sess, tok, no, co := stripeCheckout(t)
	signed := func(path string, b []byte) *testenv.Response {
		return e.Do("POST", path, "", b, api.HeaderStripeSignature, testenv.StripeSignature(b, testenv.StripeWebhookSecret, time.Now()),
			api.HeaderSignature, signature.Sign(testenv.WebhookSecret, time.Now(), b))
	}

	paid := fullSizeEvent(t, "evt_full", oldIntent(co.Str("payment_id"), no, 990, 49))
	require.Greater(t, len(paid), 48<<10, "a full-size event")
	r := signed("/api/v1/payments/stripe/webhook", paid)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)

	huge := fullSizeEvent(t, "evt_huge", oldIntent("pi_huge", no, 990, 600))
	require.Greater(t, len(huge), 256<<10)
	testenv.RequireError(t, headersOnly(t, e, "/api/v1/payments/stripe/webhook", len(huge)), 413, "PAYLOAD_TOO_LARGE", "262144")
	testenv.RequireError(t, headersOnly(t, e, "/api/v1/payments/webhook", len(paid)), 413, "PAYLOAD_TOO_LARGE", "8192")
	testenv.RequireError(t, headersOnly(t, e, "/api/v1/orders/"+no+"/cancel", len(paid)), 413, "PAYLOAD_TOO_LARGE", "8192")

	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
}

// oldIntent is a succeeded PaymentIntent as an API version of 2020 sends
// it, with its charge and keys metadata entries of 500 characters besides
// the order number.
func oldIntent(id, orderNo string, amount, keys int) map[string]any {
	meta := map[string]string{"order_no": orderNo}
	for i := range keys {
		meta[fmt.Sprintf("shop_field_%02d", i)] = strings.Repeat(string(rune('a'+i%26)), 500)
	}
	address := map[string]any{"city": "Springfield", "country": "US", "line1": "742 Evergreen Terrace", "line2": nil, "postal_code": "49007", "state": "OR"}
	charge := map[string]any{
		"id": "ch_" + id, "object": "charge", "amount": amount, "amount_captured": amount, "amount_refunded": 0,
		"balance_transaction": "txn_" + id, "captured": true, "created": time.Now().Unix(), "currency": "usd",
		"billing_details": map[string]any{"address": address, "email": "shopper@example.com", "name": "Jenny Rosen", "phone": nil},
		"fraud_details":   map[string]any{}, "livemode": false, "metadata": meta, "paid": true, "payment_intent": id,
		"outcome": map[string]any{"network_status": "approved_by_network", "reason": nil, "risk_level": "normal", "risk_score": 32,
			"seller_message": "Payment complete.", "type": "authorized"},
		"payment_method": "pm_" + id,
		"payment_method_details": map[string]any{"type": "card", "card": map[string]any{"brand": "visa", "country": "US",
			"exp_month": 8, "exp_year": 2030, "fingerprint": "Xt5EWLLDS7FJjR1c", "funding": "credit", "last4": "4242", "network": "visa",
			"checks":         map[string]any{"address_line1_check": "pass", "address_postal_code_check": "pass", "cvc_check": "pass"},
			"three_d_secure": nil, "wallet": nil}},
		"receipt_url": "https://pay.example/receipts/" + id,
		"refunds":     map[string]any{"object": "list", "data": []any{}, "has_more": false, "total_count": 0, "url": "/v1/charges/ch_" + id + "/refunds"},
		"shipping":    map[string]any{"address": address, "name": "Jenny Rosen"}, "status": "succeeded",
	}
	return map[string]any{
		"id": id, "object": "payment_intent", "amount": amount, "amount_capturable": 0, "amount_received": amount,
		"capture_method": "automatic", "confirmation_method": "automatic", "currency": "usd", "created": time.Now().Unix(),
		"charges":       map[string]any{"object": "list", "data": []any{charge}, "has_more": false, "total_count": 1, "url": "/v1/charges?payment_intent=" + id},
		"client_secret": id + "_secret_x", "description": "seckill order " + orderNo, "livemode": false, "metadata": meta,
		"payment_method": "pm_" + id, "payment_method_types": []string{"card"}, "receipt_email": "shopper@example.com",
		"shipping": map[string]any{"address": address, "name": "Jenny Rosen"}, "status": "succeeded",
	}
}

// fullSizeEvent is a payment_intent.succeeded event of API version
// 2020-08-27 around intent.
func fullSizeEvent(t *testing.T, id string, intent map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": "2020-08-27", "created": time.Now().Unix(),
		"livemode": false, "pending_webhooks": 1, "request": map[string]any{"id": nil, "idempotency_key": nil},
		"type": "payment_intent.succeeded", "data": map[string]any{"object": intent}})
	require.NoError(t, err)
	return b
}

// headersOnly announces a POST body of n bytes and sends none of it: the
// limit is decided from the headers, and the answer comes before the body
// (a client still writing a large body when the server answers and closes
// would see its write reset instead of the 413).
func headersOnly(t *testing.T, e *testenv.Env, path string, n int) *testenv.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.BaseURL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: seckill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, n)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := &testenv.Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}
