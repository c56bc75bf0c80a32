package paymenthttp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/paymenthttp"
	"github.com/seckill/seckill/signature"
)

// These tests talk to testenv's in-memory adapter (an httptest server) or
// to a bare httptest server: they need no MySQL, Redis or Temporal and run
// under -short.

var secret = []byte("adapter-secret-0123456789")

// start serves an adapter and returns a provider configured for all of it.
func start(t *testing.T) (*testenv.PaymentAdapter, *paymenthttp.Provider) {
	t.Helper()
	a := testenv.StartPaymentAdapter(t, secret)
	p, err := paymenthttp.New(paymenthttp.Config{BaseURL: a.URL, Secret: secret})
	require.NoError(t, err)
	return a, p
}

func checkoutRequest(orderNo string) seckill.CheckoutRequest {
	return seckill.CheckoutRequest{OrderNo: orderNo, AmountCents: 700, Currency: "usd",
		ExpiresAt: time.Now().Add(time.Minute).Truncate(time.Second), TraceID: "tr-" + orderNo}
}

// requireRetryable says err is an error to retry: not a domain refusal.
func requireRetryable(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.Error(t, err, msgAndArgs...)
	var domain *seckill.Error
	require.False(t, errors.As(err, &domain), "retryable, not a domain refusal: %v", err)
	require.Equal(t, seckill.EINTERNAL, seckill.ErrorCode(err), "%v", err)
}

func TestOpenIsOncePerOrder(t *testing.T) {
	a, p := start(t)
	ctx := context.Background()
	r := checkoutRequest("7-open")
	first, err := p.CreatePayment(ctx, r)
	require.NoError(t, err)
	require.Equal(t, paymenthttp.Name, p.Name())
	require.Equal(t, paymenthttp.Name, first.Provider)
	require.Equal(t, r.OrderNo, first.OrderNo)
	require.NotEmpty(t, first.PaymentID)
	require.Equal(t, a.URL+"/pay/"+first.PaymentID, first.CheckoutURL)
	require.Equal(t, "cs_"+first.PaymentID, first.ClientSecret)
	require.True(t, r.ExpiresAt.Equal(first.ExpiresAt), "%s != %s", r.ExpiresAt, first.ExpiresAt)

	again, err := p.CreatePayment(ctx, r) // a retry, or the shopper asking twice
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.Equal(t, 2, a.Calls()[testenv.CallOpen])
	held, ok := a.Payment(r.OrderNo)
	require.True(t, ok)
	require.Equal(t, seckill.ProviderPayment{PaymentID: first.PaymentID, State: seckill.PaymentOpen, AmountCents: 700, Currency: "usd"}, held)

	other, err := p.CreatePayment(ctx, checkoutRequest("7-other"))
	require.NoError(t, err)
	require.NotEqual(t, first.PaymentID, other.PaymentID)
}

func TestQueryFollowsThePayment(t *testing.T) {
	a, p := start(t)
	ctx := context.Background()
	ref := seckill.PaymentRef{OrderNo: "7-query"}
	got, err := p.QueryPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentNone, got.State, "never opened")

	co, err := p.CreatePayment(ctx, checkoutRequest(ref.OrderNo))
	require.NoError(t, err)
	for _, ref := range []seckill.PaymentRef{ref, {OrderNo: ref.OrderNo, PaymentID: co.PaymentID}} {
		got, err = p.QueryPayment(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, seckill.ProviderPayment{PaymentID: co.PaymentID, State: seckill.PaymentOpen, AmountCents: 700, Currency: "usd"}, got)
	}

	require.NoError(t, a.Process(ref.OrderNo))
	got, err = p.QueryPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentProcessing, got.State)

	paid, err := a.Pay(ctx, ref.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentSucceeded, paid.State)
	got, err = p.QueryPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.ProviderPayment{PaymentID: co.PaymentID, State: seckill.PaymentSucceeded, AmountCents: 700, Currency: "usd"}, got)
	require.Equal(t, 5, a.Calls()[testenv.CallQuery])
}

func TestCancel(t *testing.T) {
	a, p := start(t)
	ctx := context.Background()

	// OPEN: cancelled, for good.
	co, err := p.CreatePayment(ctx, checkoutRequest("7-open"))
	require.NoError(t, err)
	ref := seckill.PaymentRef{OrderNo: "7-open", PaymentID: co.PaymentID}
	for range 2 { // a retry answers the same
		got, err := p.CancelPayment(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, seckill.ProviderPayment{PaymentID: co.PaymentID, State: seckill.PaymentCanceled, AmountCents: 700, Currency: "usd"}, got)
	}
	got, err := p.QueryPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCanceled, got.State)
	_, err = a.Pay(ctx, ref.OrderNo)
	require.Error(t, err, "a cancelled payment cannot be paid")
	_, err = p.CreatePayment(ctx, checkoutRequest("7-open"))
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "reopened after its cancel: %v", err)

	// Paid first: it cannot be cancelled, and says so.
	co, err = p.CreatePayment(ctx, checkoutRequest("7-paid"))
	require.NoError(t, err)
	_, err = a.Pay(ctx, "7-paid")
	require.NoError(t, err)
	got, err = p.CancelPayment(ctx, seckill.PaymentRef{OrderNo: "7-paid"})
	require.NoError(t, err)
	require.Equal(t, seckill.ProviderPayment{PaymentID: co.PaymentID, State: seckill.PaymentSucceeded, AmountCents: 700, Currency: "usd"}, got)

	// In flight: neither paid nor cancellable yet.
	_, err = p.CreatePayment(ctx, checkoutRequest("7-flight"))
	require.NoError(t, err)
	require.NoError(t, a.Process("7-flight"))
	got, err = p.CancelPayment(ctx, seckill.PaymentRef{OrderNo: "7-flight"})
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentProcessing, got.State)

	// Never opened: NONE, and no payment can open for the order afterwards.
	got, err = p.CancelPayment(ctx, seckill.PaymentRef{OrderNo: "7-none"})
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentNone, got.State)
	_, err = p.CreatePayment(ctx, checkoutRequest("7-none"))
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
}

func TestRefundThroughTheAdapter(t *testing.T) {
	a := testenv.StartPaymentAdapter(t, secret)
	// Refunds only: the adapter's refund URL alone.
	p, err := paymenthttp.New(paymenthttp.Config{RefundURL: a.RefundURL, Secret: secret})
	require.NoError(t, err)
	ctx := context.Background()
	r := seckill.Refund{PaymentID: "pay_1", OrderNo: "7-abc", AmountCents: 500, Currency: "jpy", TraceID: "tr"}
	for range 2 { // asked again (a retry): the same refund
		id, err := p.Refund(ctx, r)
		require.NoError(t, err)
		require.Equal(t, "rf_pay_1", id)
	}
	refunds, asks := a.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, r, refunds["pay_1"])
	require.Equal(t, 2, asks)

	// Refused for good: CONFLICT, which the refund activity does not retry.
	a.SetAnswer(func(int) (int, string) {
		return http.StatusUnprocessableEntity, `{"message":"amount over the capture"}`
	})
	_, err = p.Refund(ctx, seckill.Refund{PaymentID: "pay_2", AmountCents: 1})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	require.ErrorContains(t, err, "amount over the capture")
	// Unknown: a 5xx, a 200 without an id, a wrong signature are errors to retry.
	for _, ans := range []struct {
		status int
		body   string
	}{{http.StatusBadGateway, "<html>proxy</html>"}, {http.StatusOK, `{}`}, {http.StatusOK, "refunded"}} {
		a.SetAnswer(func(int) (int, string) { return ans.status, ans.body })
		_, err = p.Refund(ctx, seckill.Refund{PaymentID: "pay_3", AmountCents: 1})
		requireRetryable(t, err, ans.body)
	}
	a.SetAnswer(nil)
	wrong, err := paymenthttp.New(paymenthttp.Config{RefundURL: a.RefundURL, Secret: []byte("not-the-adapter-secret")})
	require.NoError(t, err)
	_, err = wrong.Refund(ctx, seckill.Refund{PaymentID: "pay_4", AmountCents: 1})
	requireRetryable(t, err)
	require.ErrorContains(t, err, "401")

	// With no payments API the provider opens nothing, and no payment can
	// be open at a close: NONE without asking.
	_, err = p.CreatePayment(ctx, checkoutRequest("7-abc"))
	require.ErrorContains(t, err, "SECKILL_PAYMENT_URL")
	for _, f := range []func(context.Context, seckill.PaymentRef) (seckill.ProviderPayment, error){p.QueryPayment, p.CancelPayment} {
		got, err := f(ctx, seckill.PaymentRef{OrderNo: "7-abc", PaymentID: "pay_1"})
		require.NoError(t, err)
		require.Equal(t, seckill.ProviderPayment{PaymentID: "pay_1", State: seckill.PaymentNone}, got)
	}
	calls := a.Calls()
	require.Zero(t, calls[testenv.CallOpen]+calls[testenv.CallQuery]+calls[testenv.CallCancel])
}

func TestRefundsDefaultUnderTheBaseURL(t *testing.T) {
	a, p := start(t)
	ctx := context.Background()
	co, err := p.CreatePayment(ctx, checkoutRequest("7-late"))
	require.NoError(t, err)
	_, err = a.Pay(ctx, "7-late")
	require.NoError(t, err)
	id, err := p.Refund(ctx, seckill.Refund{PaymentID: co.PaymentID, OrderNo: "7-late", AmountCents: 700, TraceID: "tr"})
	require.NoError(t, err)
	require.Equal(t, "rf_"+co.PaymentID, id)
	refunds, _ := a.Refunds()
	require.Contains(t, refunds, co.PaymentID)

	// More than the payment captured: the adapter refuses it for good.
	_, err = p.Refund(ctx, seckill.Refund{PaymentID: co.PaymentID, OrderNo: "7-late", AmountCents: 701})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	require.ErrorContains(t, err, "amount over the capture")
}

// call is one call of the protocol.
type call struct {
	name string
	do   func(context.Context) error
}

// calls are the four calls of the protocol, in the order of a payment's
// life: open, query, cancel, refund.
func calls(p *paymenthttp.Provider) []call {
	ref := seckill.PaymentRef{OrderNo: "7-call"}
	return []call{
		{testenv.CallOpen, func(ctx context.Context) error {
			_, err := p.CreatePayment(ctx, checkoutRequest(ref.OrderNo))
			return err
		}},
		{testenv.CallQuery, func(ctx context.Context) error {
			_, err := p.QueryPayment(ctx, ref)
			return err
		}},
		{testenv.CallCancel, func(ctx context.Context) error {
			_, err := p.CancelPayment(ctx, ref)
			return err
		}},
		{testenv.CallRefund, func(ctx context.Context) error {
			_, err := p.Refund(ctx, seckill.Refund{PaymentID: "pay_x", OrderNo: ref.OrderNo, AmountCents: 700})
			return err
		}},
	}
}

func TestAdapterDownIsRetryable(t *testing.T) {
	a, p := start(t)
	a.Down(true)
	for _, c := range calls(p) {
		err := c.do(context.Background())
		requireRetryable(t, err, c.name)
		require.ErrorContains(t, err, "503", c.name)
	}
	require.Equal(t, map[string]int{testenv.CallOpen: 1, testenv.CallQuery: 1, testenv.CallCancel: 1, testenv.CallRefund: 1}, a.Calls())

	a.Down(false) // back: the same calls go through
	for _, c := range calls(p) {
		require.NoError(t, c.do(context.Background()), c.name)
	}
}

// A redirect is not followed: the signed call would go on to another
// address, or lose its body as a GET. It is an answer to retry, whose
// error names where the redirect points and the setting to change, and
// nothing reaches the redirect's target.
func TestRedirectsAreNotFollowed(t *testing.T) {
	a := testenv.StartPaymentAdapter(t, secret)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		moved := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, a.URL+r.URL.Path, code)
		}))
		for _, refundURL := range []string{"", moved.URL + "/refunds"} {
			p, err := paymenthttp.New(paymenthttp.Config{BaseURL: moved.URL, RefundURL: refundURL, Secret: secret})
			require.NoError(t, err)
			for _, c := range calls(p) {
				err := c.do(context.Background())
				requireRetryable(t, err, "%d %s", code, c.name)
				setting := "SECKILL_PAYMENT_URL"
				if c.name == testenv.CallRefund && refundURL != "" {
					setting = "SECKILL_PAYMENT_REFUND_URL"
				}
				require.ErrorContains(t, err, fmt.Sprintf("answered %d, a redirect to %s/", code, a.URL), c.name)
				require.ErrorContains(t, err, "so "+setting+" must be the address that takes them", c.name)
			}
		}
		moved.Close()
	}
	require.Empty(t, a.Calls(), "a call reached the redirect's target")
}

func TestRefusalIsAConflict(t *testing.T) {
	a, p := start(t)
	a.Refuse("account frozen")
	for _, c := range calls(p) {
		err := c.do(context.Background())
		require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%s: %v", c.name, err)
		require.ErrorContains(t, err, "account frozen", c.name)
	}
}

func TestWrongSecretIsRefusedByTheAdapter(t *testing.T) {
	a := testenv.StartPaymentAdapter(t, secret)
	p, err := paymenthttp.New(paymenthttp.Config{BaseURL: a.URL, Secret: []byte("not-the-adapter-secret")})
	require.NoError(t, err)
	for _, c := range calls(p) {
		err := c.do(context.Background())
		requireRetryable(t, err, c.name)
		require.ErrorContains(t, err, "401", c.name)
	}
	_, ok := a.Payment("7-call")
	require.False(t, ok, "nothing opened on a bad signature")
}

// fixed serves one answer to every request, checking the signature first.
func fixed(t *testing.T, status int, body string) *paymenthttp.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := signature.Verify(secret, r.Header.Get(signature.Header), raw, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	p, err := paymenthttp.New(paymenthttp.Config{BaseURL: srv.URL, Secret: secret})
	require.NoError(t, err)
	return p
}

func TestAnswersThatAreNotAnswers(t *testing.T) {
	ctx := context.Background()
	for _, body := range []string{"<html>ok</html>", ""} {
		for _, c := range calls(fixed(t, http.StatusOK, body)) {
			requireRetryable(t, c.do(ctx), "%s answered 200 %q", c.name, body)
		}
	}
	ref := seckill.PaymentRef{OrderNo: "7-x"}
	for _, status := range []string{"PAID", "open", ""} {
		p := fixed(t, http.StatusOK, `{"payment_id":"pay_1","status":"`+status+`","amount_cents":700}`)
		_, err := p.QueryPayment(ctx, ref)
		requireRetryable(t, err, status)
		require.ErrorContains(t, err, "status")
		_, err = p.CancelPayment(ctx, ref)
		requireRetryable(t, err, status)
	}
	// A currency that is not a lower-case code is not one to judge a
	// payment by.
	for _, currency := range []string{"USD", "dollars", "us"} {
		p := fixed(t, http.StatusOK, `{"payment_id":"pay_1","status":"SUCCEEDED","amount_cents":700,"currency":"`+currency+`"}`)
		_, err := p.QueryPayment(ctx, ref)
		requireRetryable(t, err, currency)
		require.ErrorContains(t, err, "currency")
	}
	// An open without where to pay is no checkout.
	for _, body := range []string{`{"payment_id":"pay_1"}`, `{"checkout_url":"https://pay.example/x"}`} {
		_, err := fixed(t, http.StatusCreated, body).CreatePayment(ctx, checkoutRequest("7-x"))
		requireRetryable(t, err, body)
	}
	// A refusal without a message is still a refusal.
	_, err := fixed(t, http.StatusConflict, "").QueryPayment(ctx, ref)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	// Any other status is retried, 4xx included.
	for _, status := range []int{http.StatusBadRequest, http.StatusNotFound, http.StatusInternalServerError} {
		_, err := fixed(t, status, `{"message":"no"}`).QueryPayment(ctx, ref)
		requireRetryable(t, err, status)
	}
}

func TestTimeoutBoundsASlowAdapter(t *testing.T) {
	a := testenv.StartPaymentAdapter(t, secret)
	a.Delay(5 * time.Second)
	p, err := paymenthttp.New(paymenthttp.Config{BaseURL: a.URL, Secret: secret, Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	for _, c := range calls(p) {
		began := time.Now()
		err := c.do(context.Background())
		requireRetryable(t, err, c.name)
		require.Less(t, time.Since(began), 2*time.Second, c.name)
	}
	// The caller's deadline bounds it too.
	a.Delay(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.QueryPayment(ctx, seckill.PaymentRef{OrderNo: "7-call"})
	require.ErrorIs(t, err, context.Canceled)
}

func TestPayNotifiesSeckill(t *testing.T) {
	webhookSecret := []byte("webhook-secret-0123456789")
	got := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := signature.Verify(webhookSecret, r.Header.Get(signature.Header), raw, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got <- string(raw)
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(hook.Close)
	a, p := start(t)
	a.WebhookURL, a.WebhookSecret = hook.URL+"/api/v1/payments/webhook", webhookSecret
	ctx := context.Background()
	co, err := p.CreatePayment(ctx, checkoutRequest("7-hook"))
	require.NoError(t, err)
	_, err = a.Pay(ctx, "7-hook")
	require.NoError(t, err)
	require.JSONEq(t, `{"event_id":"evt_`+co.PaymentID+`","payment_id":"`+co.PaymentID+
		`","order_no":"7-hook","amount_cents":700,"currency":"usd","status":"SUCCEEDED"}`, <-got)

	a.WebhookSecret = []byte("not-the-webhook-secret")
	_, err = p.CreatePayment(ctx, checkoutRequest("7-lost"))
	require.NoError(t, err)
	_, err = a.Pay(ctx, "7-lost")
	require.ErrorContains(t, err, "401")
	paid, ok := a.Payment("7-lost")
	require.True(t, ok)
	require.Equal(t, seckill.PaymentSucceeded, paid.State, "paid, its webhook lost")
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, u := range []string{"ftp://x/y", "http://", "::", "adapter.internal/payments"} {
		_, err := paymenthttp.New(paymenthttp.Config{BaseURL: u, Secret: secret})
		require.ErrorContains(t, err, "SECKILL_PAYMENT_URL", u)
		_, err = paymenthttp.New(paymenthttp.Config{BaseURL: "https://adapter.internal", RefundURL: u, Secret: secret})
		require.ErrorContains(t, err, "SECKILL_PAYMENT_REFUND_URL", u)
	}
	_, err := paymenthttp.New(paymenthttp.Config{Secret: secret})
	require.ErrorContains(t, err, "SECKILL_PAYMENT_URL", "no adapter at all")
	for _, s := range []string{"", "short", strings.Repeat("x", 15)} {
		_, err = paymenthttp.New(paymenthttp.Config{BaseURL: "https://adapter.internal", Secret: []byte(s)})
		require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER_SECRET", s)
	}
	for _, c := range []paymenthttp.Config{
		{BaseURL: "https://adapter.internal/api/", Secret: secret},
		{RefundURL: "http://127.0.0.1:9000/refund", Secret: secret},
		{BaseURL: "http://adapter:8080", RefundURL: "https://refunds.internal/r", Secret: []byte(strings.Repeat("x", 16))},
	} {
		_, err = paymenthttp.New(c)
		require.NoError(t, err, "%+v", c)
	}
}
