package main

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// `seckill dev`, what `make dev` runs for a newcomer: its demo sale sells
// and is paid at the sandbox's checkout in the one process, as the
// README's "a sale in five minutes" does it, priced in the deployment's
// currency. The demo sale had been created without one, so its orders,
// their export and their events carried no currency.
func TestDevSellsItsDemoSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	addr := testenv.FreeAddr(t)
	dev := e.Spawn(e.ProcessEnv("SECKILL_HTTP_ADDR="+addr, "SECKILL_CURRENCY=eur"), "dev")
	shop := e.Shopper(1)
	shop.BaseURL = "http://" + addr
	ctx := context.Background()
	e.Eventually(60*time.Second, "seckill dev ready", func() error { return shop.Ready(ctx) })

	// The banner names the demo sale.
	m := regexp.MustCompile(`/api/v1/sessions/(\d+)\)`).FindStringSubmatch(dev.Output())
	require.NotNil(t, m, "no session in the banner:\n%s", dev.Output())
	id, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	sess, err := shop.Session(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "eur", sess.Currency)
	require.Equal(t, seckill.SessionActive, sess.State)

	acc, err := shop.Buy(ctx, id, client.BuyOptions{Quantity: 1})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	o, err := shop.WaitOrder(wctx, acc.OrderNo, seckill.StatusWaitPay)
	require.NoError(t, err)
	require.Equal(t, "eur", o.Currency, "the order carries its sale's currency")
	require.Equal(t, sess.PriceCents, o.AmountCents)

	co, err := shop.Checkout(ctx, acc.OrderNo)
	require.NoError(t, err)
	status, err := shop.PaySandbox(ctx, co.CheckoutURL, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	o, err = shop.WaitOrder(wctx, acc.OrderNo, seckill.StatusPaid)
	require.NoError(t, err)
	require.Equal(t, "eur", o.Currency)
	row, err := e.DB.Order(ctx, acc.OrderNo)
	require.NoError(t, err)
	require.Equal(t, "eur", row.Currency, "the order's row, which the export and the events read")
	e.RequireInvariants(id)
}
