package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// The table names each refund's state, order, payment, amount, attempts,
// when (next attempt, parked since, received since) and last error; an
// amount in its currency's own digits when the order carries one.
func TestPrintRefundsTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := []seckill.RefundState{
		{Refund: seckill.Refund{PaymentID: "pay-p", OrderNo: "7-p", AmountCents: 1999, Currency: "usd"}, State: seckill.RefundParked,
			Attempts: 12, LastError: "provider: card closed", ParkedAt: now.Add(-time.Hour)},
		{Refund: seckill.Refund{PaymentID: "pay-d", OrderNo: "7-d", AmountCents: 500, Currency: "jpy"}, State: seckill.RefundDue,
			Attempts: 2, LastError: "provider: 503", NextAttemptAt: now.Add(90 * time.Second)},
		{Refund: seckill.Refund{PaymentID: "pay-r", OrderNo: "7-r", AmountCents: 500}, State: seckill.RefundReceived,
			CreatedAt: now.Add(-5 * time.Minute)},
	}
	var buf bytes.Buffer
	require.NoError(t, printRefunds(&buf, states, false, now))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, []string{"STATE", "ORDER_NO", "PAYMENT_ID", "AMOUNT", "ATTEMPTS", "WHEN", "LAST_ERROR"}, strings.Fields(lines[0]))
	require.Regexp(t, `^parked +7-p +pay-p +19\.99 USD +12 +parked 1h0m0s ago \(2026-01-02T02:04:05Z\) +provider: card closed$`, lines[1])
	require.Regexp(t, `^pending +7-d +pay-d +500 JPY +2 +next in 1m30s +provider: 503$`, lines[2])
	require.Regexp(t, `^received +7-r +pay-r +5\.00 +0 +received 5m0s ago`, lines[3])

	buf.Reset()
	require.NoError(t, printRefunds(&buf, nil, false, now))
	require.Equal(t, "no refunds pending\n", buf.String())
}

// `seckill refunds` lists a parked refund from MySQL, and `seckill refunds
// retry <payment_id>` makes it due again; an unknown payment is an error.
func TestRefundsCommand(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	sess := e.Session(2, 1, 250)
	ctx := context.Background()
	no := fmt.Sprintf("%d-cli", sess.ID)
	req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: 1, Quantity: 1,
		Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: 250, PayTimeout: time.Minute}
	_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
	require.NoError(t, err)
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-cli", PaymentID: "pay-cli", OrderNo: no, AmountCents: 250})
	require.NoError(t, err)
	_, err = e.DB.RecordRefundFailure(ctx, "pay-cli", "provider: no such card", seckill.RefundRetry{First: time.Second, Attempts: 1})
	require.NoError(t, err)

	run := func(args ...string) (string, error) { return execute(ctx, args...) }
	out, err := run("refunds", "--json")
	require.NoError(t, err)
	var listed struct{ Refunds []seckill.RefundState }
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Refunds, 1)
	r := listed.Refunds[0]
	require.Equal(t, "pay-cli", r.PaymentID)
	require.Equal(t, no, r.OrderNo)
	require.Equal(t, int64(250), r.AmountCents)
	require.Equal(t, seckill.RefundParked, r.State)
	require.Equal(t, 1, r.Attempts)
	require.Equal(t, "provider: no such card", r.LastError)
	require.False(t, r.ParkedAt.IsZero())

	out, err = run("refunds", "retry", "pay-cli")
	require.NoError(t, err)
	require.Contains(t, out, "pay-cli is due now")
	out, err = run("refunds")
	require.NoError(t, err)
	require.Regexp(t, `pending +`+no+` +pay-cli +2\.50 +0 +next: now`, out)
	_, err = run("refunds", "retry", "pay-nope")
	require.ErrorContains(t, err, "has no pending refund")
}
