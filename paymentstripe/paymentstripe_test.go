package paymentstripe_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/paymentstripe"
)

// These tests serve Stripe-shaped JSON from an httptest server, for what
// stripe-mock's fixtures cannot show: each status, a cancel refused
// because the intent succeeded first, Stripe's errors, timeouts. They need
// no service and run under -short.

const key = "sk_test_51SeckillSecretKeyThatMustNeverLeak"

// fakeStripe answers the intent's retrieve with status and amount, and
// the cancel with cancelAnswer (a 200 with the intent canceled when nil).
type fakeStripe struct {
	mu           sync.Mutex
	status       string
	received     int64
	orderNo      string
	cancelAnswer func(w http.ResponseWriter)
	calls        []string
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer "+key {
		stripeError(w, http.StatusUnauthorized, "invalid_request_error", "", "Invalid API Key provided: "+key)
		return
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel"):
		if f.cancelAnswer != nil {
			f.cancelAnswer(w)
			return
		}
		f.status = "canceled"
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/"):
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "pi_1", "object": "payment_intent", "amount": 700,
		"amount_received": f.received, "currency": "usd", "status": f.status, "client_secret": "pi_1_secret_x",
		"metadata": map[string]string{"order_no": f.orderNo}})
}

func stripeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"type": typ, "code": code, "message": msg}})
}

func startFake(t *testing.T, f *fakeStripe) *paymentstripe.Provider {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p, err := paymentstripe.New(paymentstripe.Config{SecretKey: key, APIURL: srv.URL, Timeout: 300 * time.Millisecond})
	require.NoError(t, err)
	return p
}

var ref = seckill.PaymentRef{OrderNo: "9-1", PaymentID: "pi_1"}

func TestStripeStatusMapping(t *testing.T) {
	for status, want := range map[string]seckill.ProviderPayment{
		"succeeded":               {PaymentID: "pi_1", State: seckill.PaymentSucceeded, AmountCents: 700, Currency: "usd"},
		"processing":              {PaymentID: "pi_1", State: seckill.PaymentProcessing},
		"canceled":                {PaymentID: "pi_1", State: seckill.PaymentCanceled},
		"requires_payment_method": {PaymentID: "pi_1", State: seckill.PaymentOpen},
		"requires_confirmation":   {PaymentID: "pi_1", State: seckill.PaymentOpen},
		"requires_action":         {PaymentID: "pi_1", State: seckill.PaymentOpen},
		"requires_capture":        {PaymentID: "pi_1", State: seckill.PaymentOpen},
	} {
		f := &fakeStripe{status: status, orderNo: ref.OrderNo}
		if status == "succeeded" {
			f.received = 700
		}
		got, err := startFake(t, f).QueryPayment(context.Background(), ref)
		require.NoError(t, err, status)
		require.Equal(t, want, got, status)
	}

	// Settle applies a succeeded payment with what it carries, its currency too.
	f := &fakeStripe{status: "succeeded", received: 700, orderNo: ref.OrderNo}
	got, err := startFake(t, f).QueryPayment(context.Background(), ref)
	require.NoError(t, err)
	require.Equal(t, &seckill.Payment{EventID: "settle:pi_1", PaymentID: "pi_1", OrderNo: ref.OrderNo, AmountCents: 700, Currency: "usd", TraceID: "tr"},
		got.Captured(ref.OrderNo, "tr"))

	// A status newer than the code is not an answer to decide on.
	f = &fakeStripe{status: "requires_reauthorization", orderNo: ref.OrderNo}
	_, err = startFake(t, f).QueryPayment(context.Background(), ref)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)

	// Another order's intent never pays this one.
	f = &fakeStripe{status: "succeeded", received: 700, orderNo: "9-other"}
	_, err = startFake(t, f).QueryPayment(context.Background(), ref)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
}

func TestStripeCancel(t *testing.T) {
	ctx := context.Background()
	f := &fakeStripe{status: "requires_payment_method", orderNo: ref.OrderNo}
	got, err := startFake(t, f).CancelPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.ProviderPayment{PaymentID: "pi_1", State: seckill.PaymentCanceled}, got)

	// Paid while the close was deciding: Stripe refuses the cancel, the
	// intent is read again, and the order becomes PAID instead of closing.
	unexpected := func(w http.ResponseWriter) {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "payment_intent_unexpected_state",
			"You cannot cancel this PaymentIntent because it has a status of succeeded.")
	}
	f = &fakeStripe{status: "succeeded", received: 700, orderNo: ref.OrderNo, cancelAnswer: unexpected}
	got, err = startFake(t, f).CancelPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.ProviderPayment{PaymentID: "pi_1", State: seckill.PaymentSucceeded, AmountCents: 700, Currency: "usd"}, got)
	require.Equal(t, []string{"POST /v1/payment_intents/pi_1/cancel", "GET /v1/payment_intents/pi_1"}, f.calls)

	// Cancelled before (a retried close): CANCELED again.
	f = &fakeStripe{status: "canceled", orderNo: ref.OrderNo, cancelAnswer: unexpected}
	got, err = startFake(t, f).CancelPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCanceled, got.State)

	// Any other refusal is one, for good.
	f = &fakeStripe{cancelAnswer: func(w http.ResponseWriter) {
		stripeError(w, http.StatusBadRequest, "invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'")
	}}
	_, err = startFake(t, f).CancelPayment(ctx, ref)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	require.Contains(t, err.Error(), "resource_missing")
}

// Stripe down, slow, rate limiting or refusing the key: EUNAVAILABLE, so
// the caller retries. A refusal of the request itself: CONFLICT. The key
// is in no error text.
func TestStripeErrorMapping(t *testing.T) {
	answer := func(status int, typ, code string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) { stripeError(w, status, typ, code, "answered "+typ) }
	}
	for name, c := range map[string]struct {
		cancel func(w http.ResponseWriter)
		want   string
	}{
		"500":          {answer(http.StatusInternalServerError, "api_error", ""), seckill.EUNAVAILABLE},
		"503 page":     {func(w http.ResponseWriter) { http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway) }, seckill.EUNAVAILABLE},
		"rate limited": {answer(http.StatusTooManyRequests, "invalid_request_error", "rate_limit"), seckill.EUNAVAILABLE},
		"key in use":   {answer(http.StatusConflict, "idempotency_error", "idempotency_key_in_use"), seckill.EUNAVAILABLE},
		"card":         {answer(http.StatusPaymentRequired, "card_error", "card_declined"), seckill.ECONFLICT},
		"invalid":      {answer(http.StatusBadRequest, "invalid_request_error", "parameter_invalid_integer"), seckill.ECONFLICT},
		"idempotency":  {answer(http.StatusBadRequest, "idempotency_error", ""), seckill.ECONFLICT},
		"slow": {func(w http.ResponseWriter) {
			time.Sleep(time.Second)
			stripeError(w, http.StatusInternalServerError, "api_error", "", "late")
		}, seckill.EUNAVAILABLE},
	} {
		f := &fakeStripe{orderNo: ref.OrderNo, cancelAnswer: c.cancel}
		start := time.Now()
		_, err := startFake(t, f).CancelPayment(context.Background(), ref)
		require.Equal(t, c.want, seckill.ErrorCode(err), "%s: %v", name, err)
		require.Less(t, time.Since(start), 900*time.Millisecond, "%s: the timeout bounds the call", name)
		require.NotContains(t, err.Error(), key, name)
		require.Len(t, f.calls, 1, "%s: one call is one request; the caller retries", name)
	}

	// The caller's deadline bounds the call too.
	f := &fakeStripe{orderNo: ref.OrderNo, cancelAnswer: func(http.ResponseWriter) { time.Sleep(time.Second) }}
	p := startFake(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := p.CancelPayment(ctx, ref)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	require.True(t, errors.Is(ctx.Err(), context.DeadlineExceeded))

	// Nobody listening.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	p, err = paymentstripe.New(paymentstripe.Config{SecretKey: key, APIURL: srv.URL})
	require.NoError(t, err)
	_, err = p.Refund(context.Background(), seckill.Refund{PaymentID: "pi_1", OrderNo: "9-1", AmountCents: 700})
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	require.NotContains(t, err.Error(), key)

	// A wrong key: Stripe quotes it (masked) in its message; seckill never
	// repeats it, masked or not, and retries once it is fixed.
	f = &fakeStripe{}
	srv = httptest.NewServer(f)
	t.Cleanup(srv.Close)
	wrong := "sk_test_WrongKeyWrongKeyWrongKey"
	p, err = paymentstripe.New(paymentstripe.Config{SecretKey: wrong, APIURL: srv.URL})
	require.NoError(t, err)
	_, err = p.QueryPayment(context.Background(), ref)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	require.NotContains(t, err.Error(), wrong)
	require.NotContains(t, err.Error(), key)
	require.NotContains(t, err.Error(), "sk_test_")
}

func TestStripeNewRefusesBadSettings(t *testing.T) {
	for _, c := range []struct {
		cfg  paymentstripe.Config
		want string
	}{
		{paymentstripe.Config{}, "SECKILL_STRIPE_SECRET_KEY is required"},
		{paymentstripe.Config{SecretKey: "pk_test_publishable"}, "publishable key"},
		{paymentstripe.Config{SecretKey: key, APIURL: "localhost:12111"}, "SECKILL_STRIPE_API_URL"},
		{paymentstripe.Config{SecretKey: key, CheckoutURL: "/pay/{payment_id}"}, "SECKILL_STRIPE_CHECKOUT_URL"},
	} {
		_, err := paymentstripe.New(c.cfg)
		require.ErrorContains(t, err, c.want)
		require.NotContains(t, err.Error(), "pk_test_publishable", "a key is never repeated")
	}
	p, err := paymentstripe.New(paymentstripe.Config{SecretKey: "rk_test_restricted"})
	require.NoError(t, err)
	require.Equal(t, paymentstripe.Name, p.Name())
}
