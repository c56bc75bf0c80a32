package sandbox_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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

// The checkout page asks for the amount in the order's currency, counted
// in its smallest unit as the providers count it: cents for usd, yen for
// jpy (no minor unit), fils for bhd (three digits).
func TestCheckoutPageAmount(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	p := e.Provider
	for cur, want := range map[string]string{"usd": "19.99 USD", "jpy": "1999 JPY", "bhd": "1.999 BHD"} {
		co, err := p.CreatePayment(context.Background(), seckill.CheckoutRequest{OrderNo: "7-priced-" + cur, AmountCents: 1999,
			Currency: cur, ExpiresAt: time.Now().Add(time.Minute)})
		require.NoError(t, err)
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, sandbox.CheckoutPath+co.PaymentID, nil))
		require.Equal(t, http.StatusOK, w.Code)
		require.Contains(t, w.Body.String(), `<p class="amount" id="amount">`+want+`</p>`, cur)
		require.Contains(t, w.Body.String(), `>Pay `+want+`</button>`, cur)
	}
}
