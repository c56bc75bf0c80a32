package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/signature"
	"github.com/seckill/seckill/temporal"
)

// requireUntouched asserts that the session's Redis stock is full and no
// reservation or order exists: a refused request changed nothing.
func requireUntouched(t *testing.T, e *testenv.Env, sess *seckill.Session) {
	t.Helper()
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, sess.TotalStock, r.RedisStock)
	require.Zero(t, r.ReservedQty)
	require.Empty(t, r.Orders)
}

// Bad input of every kind gets a clear error in the API's shape and changes
// nothing.
func TestAdmissionRejectsBadInput(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(5, 2, 100)
	tok := e.Token(1)
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID)

	expired, err := auth.IssueToken(testenv.JWTSecret, 1, -time.Minute, time.Now())
	require.NoError(t, err)
	forged, err := auth.IssueToken([]byte("another secret"), 1, time.Hour, time.Now())
	require.NoError(t, err)
	noExp, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "1"}).SignedString(testenv.JWTSecret)
	require.NoError(t, err)
	badSub, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(testenv.JWTSecret)
	require.NoError(t, err)
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "1", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)

	cases := []struct {
		name, path, token string
		body              any
		status            int
		code, msg         string
	}{
		{"no token", path, "", nil, 401, "UNAUTHENTICATED", "missing bearer token"},
		{"expired token", path, expired, nil, 401, "UNAUTHENTICATED", "expired"},
		{"forged token", path, forged, nil, 401, "UNAUTHENTICATED", "does not verify"},
		{"alg none", path, none, nil, 401, "UNAUTHENTICATED", "does not verify"},
		{"no exp", path, noExp, nil, 401, "UNAUTHENTICATED", "exp"},
		{"non-numeric sub", path, badSub, nil, 401, "UNAUTHENTICATED", "sub"},
		{"malformed json", path, tok, `{"quantity":`, 400, "INVALID_ARGUMENT", "not valid JSON"},
		{"wrong type", path, tok, `{"quantity":"2"}`, 400, "INVALID_ARGUMENT", `"quantity" must be an integer`},
		{"fraction", path, tok, `{"quantity":1.5}`, 400, "INVALID_ARGUMENT", `"quantity"`},
		{"unknown field", path, tok, `{"quantity":1,"price":0}`, 400, "INVALID_ARGUMENT", `unknown field "price"`},
		{"not an object", path, tok, `[1]`, 400, "INVALID_ARGUMENT", "JSON object"},
		{"null", path, tok, ` null `, 400, "INVALID_ARGUMENT", "JSON object"},
		{"trailing data", path, tok, `{"quantity":1}{}`, 400, "INVALID_ARGUMENT", "after the JSON object"},
		{"zero", path, tok, `{"quantity":0}`, 400, "INVALID_ARGUMENT", "between 1 and 2"},
		{"negative", path, tok, `{"quantity":-1}`, 400, "INVALID_ARGUMENT", "between 1 and 2"},
		{"over limit", path, tok, `{"quantity":3}`, 400, "INVALID_ARGUMENT", "between 1 and 2"},
		{"bad session id", "/api/v1/sessions/abc/orders", tok, nil, 400, "INVALID_ARGUMENT", "positive integer"},
		{"unknown session", "/api/v1/sessions/424242/orders", tok, nil, 404, "NOT_FOUND", "not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testenv.RequireError(t, e.Do("POST", c.path, c.token, c.body), c.status, c.code, c.msg)
		})
	}
	t.Run("huge body", func(t *testing.T) {
		testenv.RequireError(t, hugeBody(t, e, path, tok), 413, "PAYLOAD_TOO_LARGE", "larger than")
	})
	requireUntouched(t, e, sess)

	// A sane X-Request-ID is echoed; the error body's trace_id is the
	// request's OpenTelemetry trace id (logs and traces join on it), which
	// the answer's X-Request-ID names when the client sent none (or an
	// insane one).
	r := e.Do("POST", "/api/v1/sessions/424242/orders", tok, nil, "X-Request-ID", "client-trace-1")
	require.Equal(t, "client-trace-1", r.Header.Get("X-Request-ID"))
	require.Regexp(t, "^[0-9a-f]{32}$", r.Str("trace_id"))
	for _, sent := range []string{"", "a b", strings.Repeat("x", 65)} {
		r = e.Do("POST", "/api/v1/sessions/424242/orders", tok, nil, "X-Request-ID", sent)
		require.Regexp(t, "^[0-9a-f]{32}$", r.Header.Get("X-Request-ID"), "sent %q", sent)
		require.Equal(t, r.Header.Get("X-Request-ID"), r.Str("trace_id"))
	}
}

// The sale window: 425 before, 410 after, from process memory.
func TestSaleWindow(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	upcoming := &seckill.Session{SKUID: 1, Title: "later", PriceCents: 1, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(time.Hour), EndAt: now.Add(2 * time.Hour)}
	ended := &seckill.Session{SKUID: 1, Title: "over", PriceCents: 1, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(-2 * time.Hour), EndAt: now.Add(-time.Hour)}
	for _, s := range []*seckill.Session{upcoming, ended} {
		require.NoError(t, e.DB.CreateSession(ctx, s, nil))
		_, err := e.Gate.Preheat(ctx, s.ID, s.TotalStock)
		require.NoError(t, err)
	}
	tok := e.Token(1)
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", upcoming.ID), tok, nil), 425, "NOT_STARTED", "starts at")
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", ended.ID), tok, nil), 410, "ENDED", "ended at")
	g := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", upcoming.ID), "", nil)
	require.Equal(t, 200, g.Status)
	require.Equal(t, "UPCOMING", g.Str("state"))
	require.Equal(t, "ENDED", e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", ended.ID), "", nil).Str("state"))
	requireUntouched(t, e, upcoming)
	requireUntouched(t, e, ended)
}

// Webhooks: forged, stale, malformed and unknown deliveries are refused
// and change nothing; a wrong amount, or the order's amount in another
// currency, is refused (422) and never pays the order, but the money was
// captured: it is recorded for its refund; replays
// answer 200 and change nothing; a payment after the order closed is
// recorded for refund, never PAID.
func TestWebhookRules(t *testing.T) {
	// The order must stay WAIT_PAY through the refused deliveries; its
	// deadline counts from the 202, creation included.
	e := testenv.New(t, testenv.Options{PayTimeout: 6 * time.Second})
	sess := e.Session(2, 1, 990)
	tok := e.Token(1)
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)

	body := []byte(fmt.Sprintf(`{"event_id":"e1","payment_id":"p1","order_no":%q,"amount_cents":990,"status":"SUCCEEDED"}`, no))
	send := func(b []byte, sig string) *testenv.Response {
		return e.Do("POST", "/api/v1/payments/webhook", "", b, api.HeaderSignature, sig)
	}
	now := time.Now()
	testenv.RequireError(t, send(body, ""), 401, "UNAUTHENTICATED", "Seckill-Signature")
	testenv.RequireError(t, send(body, signature.Sign([]byte("wrong"), now, body)), 401, "UNAUTHENTICATED", "does not match")
	testenv.RequireError(t, send(body, signature.Sign(testenv.WebhookSecret, now.Add(-6*time.Minute), body)), 401, "UNAUTHENTICATED", "tolerance")
	tampered := []byte(strings.Replace(string(body), "990", "1", 1))
	testenv.RequireError(t, send(tampered, signature.Sign(testenv.WebhookSecret, now, body)), 401, "UNAUTHENTICATED", "does not match")
	signed := func(b string) *testenv.Response {
		return send([]byte(b), signature.Sign(testenv.WebhookSecret, time.Now(), []byte(b)))
	}
	testenv.RequireError(t, signed(`{"event_id":"e1"`), 400, "INVALID_ARGUMENT", "not valid JSON")
	testenv.RequireError(t, signed(fmt.Sprintf(`{"event_id":"e1","payment_id":"p1","order_no":%q,"amount_cents":990,"status":"FAILED"}`, no)), 400, "INVALID_ARGUMENT", "status")
	testenv.RequireError(t, signed(fmt.Sprintf(`{"event_id":"e1","payment_id":"p1","order_no":%q,"amount_cents":-5,"status":"SUCCEEDED"}`, no)), 400, "INVALID_ARGUMENT", "amount_cents")
	testenv.RequireError(t, signed(`{"event_id":"e1","payment_id":"p1","order_no":"1-nope","amount_cents":990,"status":"SUCCEEDED"}`), 404, "NOT_FOUND", "not found")
	testenv.RequireError(t, signed(fmt.Sprintf(`{"event_id":"e1","payment_id":"p1","order_no":%q,"amount_cents":990,"currency":"USD","status":"SUCCEEDED"}`, no)),
		400, "INVALID_ARGUMENT", `"currency" must be a lower-case ISO 4217 code such as usd, not "USD"`)
	testenv.RequireError(t, e.Pay(no, "p-wrong", "e-wrong", 991), 422, "AMOUNT_MISMATCH", "amount_cents 991 does not match the order's amount_cents 990 usd")
	requireRefundDue(t, e, "p-wrong", 991)
	require.Equal(t, 200, e.Pay(no, "p-wrong", "e-wrong", 991).Status, "a replay")
	// The order's digits in another currency: ¥990 is not $9.90.
	testenv.RequireError(t, signed(fmt.Sprintf(`{"event_id":"e-yen","payment_id":"p-yen","order_no":%q,"amount_cents":990,"currency":"jpy","status":"SUCCEEDED"}`, no)),
		422, "AMOUNT_MISMATCH", "amount_cents 990 jpy does not match the order's amount_cents 990 usd")
	requireRefundDue(t, e, "p-yen", 990)
	got := e.Do("GET", "/api/v1/orders/"+no, tok, nil)
	require.Equal(t, "WAIT_PAY", got.Str("status"), "refused webhooks changed nothing")

	// Let it time out, then pay: a late payment.
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusClosed)
	e.Eventually(10*time.Second, "workflow finished", func() error {
		d, err := e.Temporal.DescribeWorkflowExecution(context.Background(), temporal.WorkflowID(no), "")
		if err != nil {
			return err
		}
		if d.GetWorkflowExecutionInfo().GetCloseTime() == nil {
			return fmt.Errorf("still running")
		}
		return nil
	})
	late := e.Pay(no, "p1", "e1", 990)
	require.Equal(t, 200, late.Status, "%s", late.Raw)
	require.Equal(t, "REFUND_PENDING", e.WaitStatus(tok, no, 5*time.Second, seckill.StatusRefundPending, seckill.StatusPaid).String())
	again := e.Pay(no, "p1", "e1", 990)
	require.Equal(t, 200, again.Status)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 2, rep.DBStock)
	require.Equal(t, 2, rep.RedisStock)
	require.Equal(t, 1, rep.Orders[seckill.StatusRefundPending])
}

// requireRefundDue waits until the payment is recorded to be refunded.
func requireRefundDue(t *testing.T, e *testenv.Env, paymentID string, amountCents int64) {
	t.Helper()
	e.Eventually(10*time.Second, paymentID+" waits for its refund", func() error {
		states, err := e.DB.RefundStates(context.Background(), 100)
		for _, s := range states {
			if s.PaymentID == paymentID && s.State == seckill.RefundDue && s.AmountCents == amountCents {
				return nil
			}
		}
		return fmt.Errorf("refunds %+v, %v", states, err)
	})
}

// A shop's domain carries cookies on every request, the purchase
// included: consent, analytics, A/B tests, several kilobytes of them.
// Fiber's 4 KB read buffer refused such a purchase before reading it (400
// "Request Header Fields Too Large"); the API reads what HAProxy in front
// lets through, and says plainly when the headers are larger still.
func TestAShopDomainsCookiesBuy(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 100)
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID)
	cookies := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "c%d=%s; ", i, strings.Repeat("v", 2000)) // a browser keeps each under 4 KB
		}
		return b.String()
	}
	testenv.RequireError(t, e.Do("POST", path, e.Token(2), nil, "Cookie", cookies(20<<10)),
		400, "INVALID_ARGUMENT", "request line and headers are larger than 16384 bytes")
	requireUntouched(t, e, sess)

	tok := e.Token(1)
	r := e.Do("POST", path, tok, nil, "Cookie", cookies(10<<10))
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	e.WaitStatus(tok, r.Str("order_no"), 30*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// hugeBody announces a 64 KiB body and reads the answer without sending it:
// the server refuses on Content-Length alone, and an HTTP client still
// writing the body could see the closed connection instead of the 413.
func hugeBody(t *testing.T, e *testenv.Env, path, token string) *testenv.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.BaseURL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: seckill\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"quantity\":1,\"x\":\"", path, token, 64<<10)
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := &testenv.Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	require.NoError(t, json.Unmarshal(raw, &r.Body))
	return r
}
