package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// FindOrders pages newest first under every filter; OrderRecord tells a
// late payment's whole story: created, closed, paid after the close (a
// refund due), with the provider of its checkout and its events.
func TestFindOrdersAndOrderRecord(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 250)
	ctx := context.Background()
	var placed []string
	for user := int64(1); user <= 3; user++ {
		no := fmt.Sprintf("%d-rec%d", sess.ID, user)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: user, Quantity: 1,
			Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: 250, Currency: "usd", PayTimeout: time.Minute}
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		if user == 2 {
			require.NoError(t, e.DB.SaveCheckout(ctx, &seckill.Checkout{Provider: "sandbox", OrderNo: no, PaymentID: "pay-late",
				CheckoutURL: "http://x/pay", ExpiresAt: time.Now().Add(time.Minute)}))
			_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
			require.NoError(t, err)
			_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-late", PaymentID: "pay-late", OrderNo: no, AmountCents: 250})
			require.NoError(t, err)
			_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-eur", PaymentID: "pay-eur", OrderNo: no, AmountCents: 250, Currency: "eur"})
			require.NoError(t, err)
		}
		placed = append(placed, no)
	}

	all := seckill.OrderFilter{SessionID: sess.ID}
	page, next, err := e.DB.FindOrders(ctx, all, 0, 2)
	require.NoError(t, err)
	require.Equal(t, []string{placed[2], placed[1]}, nos(page))
	require.NotZero(t, next)
	page, next, err = e.DB.FindOrders(ctx, all, next, 2)
	require.NoError(t, err)
	require.Equal(t, []string{placed[0]}, nos(page))
	require.Zero(t, next, "the last page")
	for _, tc := range []struct {
		f    seckill.OrderFilter
		want []string
	}{
		{seckill.OrderFilter{SessionID: sess.ID, UserID: 3}, []string{placed[2]}},
		{seckill.OrderFilter{SessionID: sess.ID, Status: seckill.StatusRefundPending}, []string{placed[1]}},
		{seckill.OrderFilter{SessionID: sess.ID, Status: seckill.StatusPaid}, []string{}},
		{seckill.OrderFilter{SessionID: sess.ID, From: time.Now().Add(time.Hour)}, []string{}},
		{seckill.OrderFilter{SessionID: sess.ID, To: time.Now().Add(-time.Hour)}, []string{}},
		{seckill.OrderFilter{SessionID: sess.ID, From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}, []string{placed[2], placed[1], placed[0]}},
	} {
		got, _, err := e.DB.FindOrders(ctx, tc.f, 0, 10)
		require.NoError(t, err)
		require.Equal(t, tc.want, nos(got), "%+v", tc.f)
	}

	rec, err := e.DB.OrderRecord(ctx, placed[1])
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefundPending, rec.Order.Status)
	var steps []string
	for _, h := range rec.History {
		steps = append(steps, string(h.From)+">"+string(h.To))
	}
	require.Equal(t, []string{"QUEUED>WAIT_PAY", "WAIT_PAY>CLOSED", "CLOSED>REFUND_PENDING"}, steps)
	require.Equal(t, "pay_timeout", rec.History[1].Reason)
	// Each payment in the currency its provider took, else the order's.
	require.Len(t, rec.Payments, 2)
	require.Equal(t, seckill.PaymentRecord{Provider: "sandbox", PaymentID: "pay-late", Status: "REFUND_PENDING", AmountCents: 250,
		Currency: "usd", At: rec.Payments[0].At}, rec.Payments[0])
	require.Equal(t, seckill.PaymentRecord{Provider: "sandbox", PaymentID: "pay-eur", Status: "REFUND_PENDING", AmountCents: 250,
		Currency: "eur", At: rec.Payments[1].At}, rec.Payments[1])
	require.Len(t, rec.Refunds, 2)
	require.Equal(t, "pay-late", rec.Refunds[0].PaymentID)
	require.Equal(t, []string{"usd", "eur"}, []string{rec.Refunds[0].Currency, rec.Refunds[1].Currency})
	require.NotEmpty(t, rec.Events)
	require.Equal(t, seckill.EventOrderRefundPending, rec.Events[len(rec.Events)-1].Type)

	_, err = e.DB.OrderRecord(ctx, "nope")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
}

func nos(orders []*seckill.Order) []string {
	out := []string{}
	for _, o := range orders {
		out = append(out, o.OrderNo)
	}
	return out
}
