package mysql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// A payment the webhook wrote as RECEIVED before signalling is not "seen"
// (a redelivery signals again), is listed for ops, is found by the close
// of its order (ReceivedPayment) until it is applied, and is applied in
// place by ApplyPayment: one row, captured once, then DUPLICATE.
func TestReceivedPaymentIsAppliedInPlace(t *testing.T) {
	e, sess := store(t, 2, 1)
	ctx := context.Background()
	req := request(sess, fmt.Sprintf("%d-recv", sess.ID), 1, 1, 1)
	req.Currency = "jpy"
	_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	p := &seckill.Payment{EventID: "evt-r", PaymentID: "pay-r", OrderNo: req.OrderNo, AmountCents: 100, Currency: "jpy", TraceID: "t-r"}

	settled, err := e.DB.RecordPayment(ctx, p)
	require.NoError(t, err)
	require.False(t, settled)
	settled, err = e.DB.RecordPayment(ctx, p)
	require.NoError(t, err, "idempotent")
	require.False(t, settled, "a RECEIVED payment is delivered again")
	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, seckill.RefundReceived, states[0].State)
	require.Equal(t, "jpy", states[0].Currency, "the order's currency, what the amount counts")
	waiting, err := e.DB.ReceivedPayment(ctx, req.OrderNo)
	require.NoError(t, err)
	require.Equal(t, p, waiting)

	outcome, o, err := e.DB.ApplyPayment(ctx, p)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentCaptured, outcome)
	require.Equal(t, seckill.StatusPaid, o.Status)
	outcome, _, err = e.DB.ApplyPayment(ctx, p)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentDuplicate, outcome)
	waiting, err = e.DB.ReceivedPayment(ctx, req.OrderNo)
	require.NoError(t, err)
	require.Nil(t, waiting, "applied: nothing waits")
	settled, err = e.DB.RecordPayment(ctx, p)
	require.NoError(t, err)
	require.True(t, settled, "applied: a replay")
	settled, err = e.DB.RecordPayment(ctx, &seckill.Payment{EventID: p.EventID, PaymentID: "pay-other", OrderNo: req.OrderNo, AmountCents: 100})
	require.NoError(t, err)
	require.True(t, settled, "its event applied: a replay")
	states, err = e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, states)
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, time.Now())
	require.NoError(t, err)
	require.Zero(t, snap.PaidPaymentMismatch, "one captured payment")

	// A second payment, in euros: refunded in what the provider took.
	euros := &seckill.Payment{EventID: "evt-eur", PaymentID: "pay-eur", OrderNo: req.OrderNo, AmountCents: 100, Currency: "eur"}
	outcome, _, err = e.DB.ApplyPayment(ctx, euros)
	require.NoError(t, err)
	require.Equal(t, seckill.PaymentRefundPending, outcome)
	states, err = e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, "eur", states[0].Currency, "the payment's own currency, not the order's")
	due, err := e.DB.DueRefunds(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)
	require.Equal(t, seckill.Refund{PaymentID: "pay-eur", OrderNo: req.OrderNo, AmountCents: 100, Currency: "eur"}, due[0],
		"the provider is asked for 100 of the currency it took")
}

// A refund whose provider call keeps failing backs off (persisted: runs,
// next attempt, last error) and is parked after the policy's runs; it then
// stays visible but is never due, so it never stands in front of a newer
// refund. Retrying it by hand makes it due with a fresh round.
func TestRefundRetriesBackOffAndPark(t *testing.T) {
	e, sess := store(t, 4, 2)
	ctx := context.Background()
	policy := seckill.RefundRetry{First: time.Hour, Max: 90 * time.Minute, Attempts: 3}
	refundOf := func(name string, user int64) string {
		req := request(sess, fmt.Sprintf("%d-%s", sess.ID, name), user, 1, 1)
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
		require.NoError(t, err)
		p := &seckill.Payment{EventID: "evt-" + name, PaymentID: "pay-" + name, OrderNo: req.OrderNo, AmountCents: 100}
		outcome, o, err := e.DB.ApplyPayment(ctx, p)
		require.NoError(t, err)
		require.Equal(t, seckill.PaymentRefundPending, outcome)
		require.Equal(t, seckill.StatusRefundPending, o.Status)
		return p.PaymentID
	}
	due := func() []string {
		rs, err := e.DB.DueRefunds(ctx, 10)
		require.NoError(t, err)
		ids := []string{}
		for _, r := range rs {
			ids = append(ids, r.PaymentID)
		}
		return ids
	}
	old := refundOf("old", 1)
	require.Equal(t, []string{old}, due())

	before := time.Now()
	st, err := e.DB.RecordRefundFailure(ctx, old, "provider: 503", policy)
	require.NoError(t, err)
	require.Equal(t, seckill.RefundDue, st.State)
	require.Equal(t, 1, st.Attempts)
	require.WithinRange(t, st.NextAttemptAt, before.Add(time.Hour-time.Second), time.Now().Add(time.Hour+time.Second))
	newer := refundOf("new", 2)
	require.Equal(t, []string{newer}, due(), "the failing refund waits its backoff; the newer one goes first")

	st, err = e.DB.RecordRefundFailure(ctx, old, "provider: 503", policy)
	require.NoError(t, err)
	require.Equal(t, 2, st.Attempts)
	require.WithinRange(t, st.NextAttemptAt, before.Add(90*time.Minute-time.Second), time.Now().Add(90*time.Minute+time.Second), "capped at Max")
	st, err = e.DB.RecordRefundFailure(ctx, old, "provider: card account closed", policy)
	require.NoError(t, err)
	require.Equal(t, seckill.RefundParked, st.State)
	require.False(t, st.ParkedAt.IsZero())
	require.True(t, st.NextAttemptAt.IsZero())

	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Len(t, states, 2)
	require.Equal(t, old, states[0].PaymentID)
	require.Equal(t, seckill.RefundParked, states[0].State)
	require.Equal(t, 3, states[0].Attempts)
	require.Equal(t, "provider: card account closed", states[0].LastError)
	require.Equal(t, seckill.RefundDue, states[1].State)
	counts, err := e.DB.RefundCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{seckill.RefundDue: 1, seckill.RefundParked: 1, seckill.RefundReceived: 0}, counts)

	// Claiming a due refund leases it to one relay.
	ok, err := e.DB.ClaimRefund(ctx, newer, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = e.DB.ClaimRefund(ctx, newer, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "claimed once")
	require.Empty(t, due())
	ok, err = e.DB.ClaimRefund(ctx, old, time.Minute)
	require.NoError(t, err)
	require.False(t, ok, "a parked refund is never claimed")

	require.NoError(t, e.DB.RetryRefund(ctx, old))
	require.Equal(t, []string{old}, due())
	states, err = e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	require.Equal(t, seckill.RefundDue, states[0].State)
	require.Zero(t, states[0].Attempts)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(e.DB.RetryRefund(ctx, "pay-unknown")))

	// A refund done meanwhile is not counted as failed.
	_, err = e.DB.MarkRefunded(ctx, old, "re-1")
	require.NoError(t, err)
	st, err = e.DB.RecordRefundFailure(ctx, old, "late failure", policy)
	require.NoError(t, err)
	require.Equal(t, "refunded", st.State)
	require.Zero(t, st.Attempts)
}
