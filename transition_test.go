package seckill_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// Every status against every event: the order's transitions, and the
// statuses each one leaves alone.
func TestOrderTransitions(t *testing.T) {
	for _, s := range seckill.Statuses {
		outcome, pay := s.Pay(true)
		wrongOutcome, wrongPay := s.Pay(false)
		closed := s.Close("timeout")
		refund, refundErr := s.OperatorRefund("7-x")
		refunded := s.Refunded()
		switch s {
		case seckill.StatusWaitPay:
			require.Equal(t, seckill.PaymentCaptured, outcome)
			require.Equal(t, &seckill.Transition{From: s, To: seckill.StatusPaid, Reason: seckill.ReasonPaid}, pay)
			require.Equal(t, &seckill.Transition{From: s, To: seckill.StatusClosed, Reason: "timeout", GivesBack: true}, closed)
		case seckill.StatusClosed:
			require.Equal(t, seckill.PaymentRefundPending, outcome)
			require.Equal(t, &seckill.Transition{From: s, To: seckill.StatusRefundPending, Reason: seckill.ReasonLatePayment}, pay,
				"a late payment never reopens the order")
		default:
			require.Equal(t, seckill.PaymentRefundPending, outcome, s)
			require.Nil(t, pay, "%s takes no payment", s)
		}
		// A wrong amount (or currency) never pays the order: it waits for
		// its refund, as any payment the order cannot take.
		require.Equal(t, seckill.PaymentRefundPending, wrongOutcome, s)
		if s == seckill.StatusWaitPay {
			require.Nil(t, wrongPay, "a wrong amount leaves WAIT_PAY alone")
		} else {
			require.Equal(t, pay, wrongPay, s)
		}
		if s != seckill.StatusWaitPay {
			require.Nil(t, closed, "%s does not close", s)
		}
		if s == seckill.StatusPaid {
			require.NoError(t, refundErr)
			require.Equal(t, &seckill.Transition{From: s, To: seckill.StatusRefundPending, Reason: seckill.ReasonOperatorRefund, GivesBack: true}, refund)
		} else {
			require.Nil(t, refund)
			require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(refundErr), "%s is not refunded by an operator", s)
		}
		if s == seckill.StatusRefundPending {
			require.Equal(t, &seckill.Transition{From: s, To: seckill.StatusRefunded, Reason: seckill.ReasonRefunded}, refunded)
		} else {
			require.Nil(t, refunded, "%s is not refunded", s)
		}
	}
}

// What holds stock is asked of the status alone, and every transition
// that ends holding it gives the units back.
func TestTransitionsGiveBackWhatStopsHoldingStock(t *testing.T) {
	for _, s := range seckill.Statuses {
		_, pay := s.Pay(true)
		refund, _ := s.OperatorRefund("7-x")
		for _, tr := range []*seckill.Transition{pay, s.Close("cancelled"), refund, s.Refunded()} {
			if tr == nil {
				continue
			}
			require.Equal(t, tr.From.HoldsStock() && !tr.To.HoldsStock(), tr.GivesBack, "%+v", tr)
		}
	}
}

// A payment pays an order with its amount in its currency; where either
// names no currency (an adapter that does not say, an order from before
// orders carried one), the amount alone decides.
func TestPaymentPaysTheAmountInTheCurrency(t *testing.T) {
	for _, c := range []struct {
		cents          int64
		paid, currency string
		pays           bool
	}{
		{990, "usd", "usd", true},
		{990, "jpy", "usd", false},
		{989, "usd", "usd", false},
		{990, "", "usd", true},
		{990, "jpy", "", true},
		{991, "", "", false},
	} {
		p := seckill.Payment{AmountCents: c.cents, Currency: c.paid}
		require.Equal(t, c.pays, p.Pays(990, c.currency), "%d %q for 990 %q", c.cents, c.paid, c.currency)
	}
}
