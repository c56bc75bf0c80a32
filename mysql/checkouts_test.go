package mysql_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A checkout is recorded before the provider is asked (no payment id),
// completed once it answered, and never names another payment after:
// concurrent first saves make one row, a later answer cannot replace the
// recorded payment.
func TestCheckoutKeepsItsFirstPayment(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	exp := time.Now().Add(time.Minute).UTC().Truncate(time.Millisecond)
	_, err := e.DB.Checkout(ctx, "7-a")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, e.DB.SaveCheckout(ctx, &seckill.Checkout{Provider: "sandbox", OrderNo: "7-a", ExpiresAt: exp}))
		}()
	}
	wg.Wait()
	c, err := e.DB.Checkout(ctx, "7-a")
	require.NoError(t, err)
	require.Equal(t, &seckill.Checkout{Provider: "sandbox", OrderNo: "7-a", ExpiresAt: exp}, c)

	require.NoError(t, e.DB.SaveCheckout(ctx, &seckill.Checkout{Provider: "sandbox", OrderNo: "7-a", PaymentID: "p1", CheckoutURL: "u1", ExpiresAt: exp}))
	require.NoError(t, e.DB.SaveCheckout(ctx, &seckill.Checkout{Provider: "sandbox", OrderNo: "7-a", PaymentID: "p2", CheckoutURL: "u2", ExpiresAt: exp}))
	c, err = e.DB.Checkout(ctx, "7-a")
	require.NoError(t, err)
	require.Equal(t, "p1", c.PaymentID)
	require.Equal(t, "u1", c.CheckoutURL)
}
