package workflows_test

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/payments"
	"github.com/seckill/seckill/workflows"
)

// provider is a payment provider on the suite's clock: its one payment is
// in state, and it cannot be reached before downUntil. cancelPays makes a
// cancel find the payment just gone through.
type provider struct {
	mu         sync.Mutex
	now        func() time.Time
	state      seckill.PaymentState
	downUntil  time.Time
	cancelPays bool
	asked      int
	// amount is what its payment captured: the order's when 0.
	amount int64
}

var errDown = errors.New("provider: connection refused")

func (p *provider) QueryPayment(_ context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked++
	if p.now().Before(p.downUntil) {
		return seckill.ProviderPayment{}, errDown
	}
	return seckill.ProviderPayment{PaymentID: ref.PaymentID, State: p.state, AmountCents: cmp.Or(p.amount, 3*testPrice)}, nil
}

func (p *provider) CancelPayment(_ context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancelPays {
		p.state = seckill.PaymentSucceeded
	} else if p.state == seckill.PaymentOpen {
		p.state = seckill.PaymentCanceled
	}
	return seckill.ProviderPayment{PaymentID: ref.PaymentID, State: p.state, AmountCents: cmp.Or(p.amount, 3*testPrice)}, nil
}

// oneCheckout: the order opened its checkout, as pay_<order_no>.
type oneCheckout struct{}

func (oneCheckout) SaveCheckout(context.Context, *seckill.Checkout) error { return nil }
func (oneCheckout) Checkout(_ context.Context, no string) (*seckill.Checkout, error) {
	return &seckill.Checkout{OrderNo: no, PaymentID: "pay_" + no}, nil
}

// received are the payments the webhook recorded (RECEIVED) before
// signalling them, as MySQL keeps them.
type received struct {
	mu       sync.Mutex
	payments []seckill.Payment
}

func (r *received) record(p seckill.Payment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payments = append(r.payments, p)
}

func (r *received) ReceivedPayment(_ context.Context, orderNo string) (*seckill.Payment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.payments {
		if p.OrderNo == orderNo {
			return &p, nil
		}
	}
	return nil, nil
}

// withProvider makes the harness's close ask p, on the suite's clock, and
// returns the payments its webhooks record.
func (h *harness) withProvider(p *provider) *received {
	p.now = h.env.Now
	r := &received{}
	h.acts.Settle = &payments.Settle{Provider: p, Checkouts: oneCheckout{}, Received: r, Now: h.env.Now}
	return r
}

// At the deadline the close asks the provider before it compensates, on
// the suite's skipped clock: a payment whose webhook was lost makes the
// order PAID; a provider down for a minute keeps it open until it answers;
// one down past the pay grace no longer holds it; a payment that goes
// through during the shopper's cancel wins over the cancel.
func TestOrderAsksTheProviderBeforeClosing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    seckill.PaymentState
		down     time.Duration // past the deadline
		cancel   bool
		pays     bool
		paid     bool
		notAfter time.Duration // the order is decided within this past the deadline
		grace    time.Duration // SECKILL_PAY_GRACE, the default when 0
	}{
		{name: "webhook lost: PAID at the deadline", state: seckill.PaymentSucceeded, paid: true, notAfter: time.Second},
		{name: "open: cancelled at the provider, then closed", state: seckill.PaymentOpen, notAfter: time.Second},
		{name: "provider down for a minute, paid meanwhile", state: seckill.PaymentSucceeded, down: time.Minute, paid: true, notAfter: time.Minute + 31*time.Second},
		{name: "provider down for a minute, never paid", state: seckill.PaymentOpen, down: time.Minute, notAfter: time.Minute + 31*time.Second},
		{name: "provider down past the grace: closed anyway", state: seckill.PaymentSucceeded, down: time.Hour, grace: 30 * time.Second, notAfter: 61 * time.Second},
		{name: "payment succeeding during the cancel", state: seckill.PaymentOpen, cancel: true, pays: true, paid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-ask", 1002, 3)
			p := &provider{state: tc.state, cancelPays: tc.pays}
			if tc.down > 0 {
				p.downUntil = startTime.Add(payTimeout + tc.down)
			}
			h.withProvider(p)
			h.acts.Settle.Grace = tc.grace
			if tc.cancel {
				h.signalAt(time.Minute, workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper"})
			}
			st := h.run(req)

			if tc.paid {
				assert.Equal(t, seckill.StatusPaid, st.Status)
				assert.Equal(t, "pay_7-ask", st.PaymentID)
				assert.Zero(t, h.inj.Count("release"), "a paid order gives nothing back")
				h.assertFinal("PAID")
			} else {
				h.assertCompensated(req, st, map[bool]string{true: workflows.ReasonCancelled, false: workflows.ReasonTimeout}[tc.cancel])
				h.assertFinal("CLOSED")
			}
			if tc.down > 0 {
				assert.Greater(t, p.asked, 1, "asked again while down")
			}
			if !tc.cancel {
				deadline := startTime.Add(payTimeout)
				grace := cmp.Or(tc.grace, seckill.DefaultPayGrace)
				assert.False(t, h.env.Now().Before(deadline.Add(min(tc.down, grace))), "decided at %s, before the provider answered", h.env.Now())
				assert.True(t, h.env.Now().Before(deadline.Add(tc.notAfter)), "decided only at %s", h.env.Now())
			}
			if tc.state == seckill.PaymentOpen && !tc.pays {
				require.Equal(t, seckill.PaymentCanceled, p.state, "a closed order's payment is cancelled")
			}
		})
	}
}

// A payment whose webhook comes while the close waits for a provider it
// cannot reach (within the pay grace) pays the order: the webhook recorded
// it (RECEIVED) before its signal, and the close looks there each time the
// provider cannot answer. Not CLOSED with the payment sent to refund, as
// when the signal waited behind the close. (A minute of grace: the test
// environment caps the close's retries at 10 attempts, about 80 s.)
func TestPaymentDuringThePayGraceIsApplied(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-grace", 1002, 3)
	p := &provider{state: seckill.PaymentOpen, downUntil: startTime.Add(payTimeout + time.Hour)}
	webhook := h.withProvider(p)
	h.acts.Settle.Grace = time.Minute
	pay := payment(req, "pay_7-grace")
	h.env.RegisterDelayedCallback(func() {
		webhook.record(pay)
		h.env.SignalWorkflow(workflows.PaymentSignal, pay)
	}, payTimeout+10*time.Second)
	st := h.run(req)

	assert.Equal(t, seckill.StatusPaid, st.Status)
	assert.Equal(t, pay.PaymentID, st.PaymentID)
	assert.Empty(t, st.LatePayments, "nothing to refund")
	assert.Zero(t, h.inj.Count("release"), "a paid order gives nothing back")
	assert.True(t, h.env.Now().Before(startTime.Add(payTimeout+time.Minute)), "decided within the grace, at %s", h.env.Now())
	h.assertFinal("PAID")
}

// A payment the provider captured with an amount that is not the order's
// never pays it, and is not dropped either: the order closes and the
// payment waits for its refund.
func TestWrongAmountAtTheProviderIsRefunded(t *testing.T) {
	h := newHarness(t, 10)
	req := h.admit("7-wrong", 1002, 3)
	h.withProvider(&provider{state: seckill.PaymentSucceeded, amount: testPrice})
	st := h.run(req)

	h.assertCompensated(req, st, workflows.ReasonTimeout)
	captured, refunds := h.store.Payments(req.OrderNo)
	assert.Empty(t, captured)
	assert.Equal(t, []string{"pay_7-wrong"}, refunds)
	h.assertFinal("CLOSED")
}
