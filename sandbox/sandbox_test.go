package sandbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/sandbox"
)

// A payment cancelled before it was opened (the close cancelled while the
// shopper's checkout was still being created) can never be opened or paid
// afterwards; one cancelled when open cannot be paid either.
func TestCancelledPaymentCannotBePaid(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	p := e.Provider
	ctx := context.Background()
	req := seckill.CheckoutRequest{OrderNo: "7-racing", AmountCents: 990, Currency: "usd", ExpiresAt: time.Now().Add(time.Minute)}

	got, err := p.CancelPayment(ctx, seckill.PaymentRef{OrderNo: req.OrderNo})
	require.NoError(t, err)
	require.Contains(t, []seckill.PaymentState{seckill.PaymentNone, seckill.PaymentCanceled}, got.State)
	_, err = p.CreatePayment(ctx, req)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "opened after its cancel: %v", err)
	_, err = p.Complete(ctx, p.PaymentID(req.OrderNo), false)
	require.ErrorIs(t, err, sandbox.ErrNotPayable)

	req.OrderNo = "7-open"
	co, err := p.CreatePayment(ctx, req)
	require.NoError(t, err)
	got, err = p.CancelPayment(ctx, seckill.PaymentRef{OrderNo: req.OrderNo, PaymentID: co.PaymentID})
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCanceled, got.State)
	_, err = p.Complete(ctx, co.PaymentID, false)
	require.ErrorIs(t, err, sandbox.ErrNotPayable)
}

// The checkout page is linked where shoppers' browsers reach the API
// (CheckoutBase, SECKILL_PUBLIC_URL), the API's own address without it.
func TestCheckoutURL(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	p := e.Provider
	ctx := context.Background()
	req := seckill.CheckoutRequest{OrderNo: "7-linked", AmountCents: 990, Currency: "usd", ExpiresAt: time.Now().Add(time.Minute)}
	co, err := p.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.Equal(t, strings.TrimSuffix(p.APIBase, "/")+sandbox.CheckoutPath+co.PaymentID, co.CheckoutURL)

	p.CheckoutBase = "https://shop.example/"
	req.OrderNo = "7-behind-a-balancer"
	co, err = p.CreatePayment(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "https://shop.example/dev/checkout/"+co.PaymentID, co.CheckoutURL)
}
