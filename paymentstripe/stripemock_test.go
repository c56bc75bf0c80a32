package paymentstripe_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/paymentstripe"
)

// These tests run every call against stripe-mock, which checks each
// request against Stripe's OpenAPI spec: what they prove is that Stripe
// would accept what seckill sends. The recording proxy in front of it
// shows what was sent (stripe-mock answers fixtures: it echoes no
// metadata and enforces no idempotency).

func TestStripeMockAcceptsEveryCall(t *testing.T) {
	mock := testenv.StartStripeMock(t)
	last := func() testenv.StripeRequest {
		seen := mock.Requests()
		require.NotEmpty(t, seen)
		return seen[len(seen)-1]
	}
	p, err := paymentstripe.New(paymentstripe.Config{SecretKey: testenv.StripeMockKey, APIURL: mock.URL,
		CheckoutURL: "https://shop.example/pay?pi={payment_id}&cs={client_secret}"})
	require.NoError(t, err)
	ctx := context.Background()
	r := seckill.CheckoutRequest{OrderNo: "7-stripe", AmountCents: 700, Currency: "usd",
		ExpiresAt: time.Now().Add(time.Minute).Truncate(time.Second), TraceID: "tr-7"}

	c, err := p.CreatePayment(ctx, r)
	require.NoError(t, err)
	require.Equal(t, paymentstripe.Name, c.Provider)
	require.Equal(t, r.OrderNo, c.OrderNo)
	require.True(t, strings.HasPrefix(c.PaymentID, "pi_"), c.PaymentID)
	require.NotEmpty(t, c.ClientSecret)
	require.Equal(t, "https://shop.example/pay?pi="+c.PaymentID+"&cs="+url.QueryEscape(c.ClientSecret), c.CheckoutURL)
	require.True(t, r.ExpiresAt.Equal(c.ExpiresAt))
	create := last()
	require.Equal(t, http.MethodPost, create.Method)
	require.Equal(t, "/v1/payment_intents", create.Path)
	require.Equal(t, r.OrderNo, create.IdempotencyKey, "asking again returns the same intent")
	require.Equal(t, "700", create.Form.Get("amount"))
	require.Equal(t, "usd", create.Form.Get("currency"))
	require.Equal(t, r.OrderNo, create.Form.Get("metadata[order_no]"))
	require.Equal(t, "tr-7", create.Form.Get("metadata[trace_id]"))
	require.Equal(t, "true", create.Form.Get("automatic_payment_methods[enabled]"))

	ref := seckill.PaymentRef{OrderNo: r.OrderNo, PaymentID: c.PaymentID}
	got, err := p.QueryPayment(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentOpen, got.State, "the fixture requires a payment method")
	require.Equal(t, testenv.StripeRequest{Method: http.MethodGet, Path: "/v1/payment_intents/" + c.PaymentID, Form: url.Values{}}, last())

	// A checkout whose create answer was lost knows only the order.
	got, err = p.QueryPayment(ctx, seckill.PaymentRef{OrderNo: r.OrderNo})
	require.NoError(t, err)
	require.NotEmpty(t, got.PaymentID)
	search := last()
	require.Equal(t, "/v1/payment_intents/search", search.Path)
	require.Equal(t, "metadata['order_no']:'7-stripe'", search.Form.Get("query"))

	_, err = p.CancelPayment(ctx, ref)
	require.NoError(t, err)
	cancel := last()
	require.Equal(t, "/v1/payment_intents/"+c.PaymentID+"/cancel", cancel.Path)
	require.Equal(t, "abandoned", cancel.Form.Get("cancellation_reason"))

	refundID, err := p.Refund(ctx, seckill.Refund{PaymentID: c.PaymentID, OrderNo: r.OrderNo, AmountCents: 700, TraceID: "tr-7"})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(refundID, "re_"), refundID)
	refund := last()
	require.Equal(t, "/v1/refunds", refund.Path)
	require.Equal(t, "refund:"+c.PaymentID, refund.IdempotencyKey)
	require.Equal(t, c.PaymentID, refund.Form.Get("payment_intent"))
	require.Equal(t, "700", refund.Form.Get("amount"))
}
