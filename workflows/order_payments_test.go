package workflows_test

// Payments are never lost: a retried capture or late payment keeps its id,
// a payment that cannot be recorded fails the workflow loudly, buffered
// payments are recorded on every way out (failures included), and a
// payment buffered when the row comes into being is applied first.

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/workflows"
)

// A payment whose first ApplyPayment attempt committed but timed out is
// retried; the retry answers DUPLICATE, and the state still names the
// payment that paid the order.
func TestRetriedCaptureKeepsPaymentID(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug1", 1016, 1)
	h.inj.FailNext(storetest.ApplyPayment, storetest.LostResponse())
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-x"))

	st := h.run(req)

	assert.Equal(t, seckill.StatusPaid, st.Status)
	assert.Equal(t, "pay-x", st.PaymentID)
	h.assertInvariants()
}

// The same for a late payment: its refund is recorded in MySQL, and the
// retry's DUPLICATE outcome still lists it among the late payments.
func TestRetriedLatePaymentIsListed(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug2", 1017, 1)
	h.inj.FailNext(storetest.ApplyPayment, storetest.LostResponse())
	h.inj.On(storetest.CloseOrder, storetest.Hooks{Before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-y")) }})

	st := h.run(req)

	assert.Equal(t, seckill.StatusRefundPending, st.Status)
	assert.Equal(t, []string{"pay-y"}, st.LatePayments)
	h.assertInvariants()
}

// A payment signal whose ApplyPayment keeps failing past its retry budget
// (a day in production, 10 attempts in the test environment) is never
// dropped: the webhook already answered 200, so the workflow fails loudly
// with the payment in its history, and the order is NOT closed over it
// (its stock stays held until ops resolve it).
func TestUnrecordablePaymentFailsLoudly(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bug3", 1018, 1)
	h.inj.FailNext(storetest.ApplyPayment, storetest.Times(10, storetest.Transient())...) // every attempt the policy allows
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-z"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, seckill.StatusWaitPay, h.store.Status(req.OrderNo), "not closed over an accepted payment")
	assert.Zero(t, h.inj.Count(storetest.CloseOrder))
	assert.Zero(t, h.inj.Count(storetest.Release))
	h.assertInvariants()
}

// The same for a payment buffered when the row comes into being (applied
// before the pay timer is set): the workflow fails before it waits, and
// the order is not closed over the payment.
func TestUnrecordableBufferedPaymentFailsLoudly(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-bufail", 1042, 1)
	h.inj.FailNext(storetest.ApplyPayment, storetest.Times(10, storetest.Transient())...) // every attempt the policy allows
	h.payDuring(storetest.CreateOrder, payment(req, "pay-b"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.True(t, h.env.Now().Before(startTime.Add(payTimeout)), "failed at +%v, not at the deadline", h.env.Now().Sub(startTime))
	assert.Equal(t, 10, h.inj.Count(storetest.ApplyPayment))
	assert.Equal(t, seckill.StatusWaitPay, h.store.Status(req.OrderNo), "not closed over an accepted payment")
	assert.Zero(t, h.inj.Count(storetest.CloseOrder))
	assert.Zero(t, h.inj.Count(storetest.Release))
	h.assertInvariants()
}

// giveUpWithBufferedPayment runs an order (quantity 1) whose step c fails
// on every attempt while payment paymentID is delivered during its first
// attempt; the workflow must fail (msgAndArgs say why it must). It returns
// the harness, the order, and the payments captured and queued for refund.
func giveUpWithBufferedPayment(t *testing.T, orderNo string, userID int64, c storetest.Call, paymentID string,
	msgAndArgs ...any) (h *harness, req seckill.OrderRequest, captured, refunds []string) {
	t.Helper()
	h = newHarness(t, 10)
	req = h.admit(orderNo, userID, 1)
	h.inj.FailAlways(c, storetest.Transient())
	h.payDuring(c, payment(req, paymentID))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError(), msgAndArgs...)
	captured, refunds = h.store.Payments(req.OrderNo)
	return h, req, captured, refunds
}

// Compensation gives up (CloseOrder fails past its retry budget) while a
// payment is buffered: the payment is still applied before the workflow
// fails. The close never committed, so the order still holds its stock and
// takes the payment (PAID), exactly as the compare-and-set would have
// settled the race.
func TestBufferedPaymentRecordedWhenCompensationGivesUp(t *testing.T) {
	h, req, captured, refunds := giveUpWithBufferedPayment(t, "7-compfail", 1019, storetest.CloseOrder, "pay-cf",
		"the compensation failure stays loud")
	assert.Equal(t, []string{"pay-cf"}, captured)
	assert.Empty(t, refunds)
	assert.Equal(t, seckill.StatusPaid, h.store.Status(req.OrderNo))
	assert.Zero(t, h.inj.Count(storetest.Release))
	h.assertInvariants()
}

// The close committed but the Redis release gives up: a payment buffered
// meanwhile is recorded as a late payment (REFUND_PENDING) before the
// workflow fails.
func TestBufferedPaymentRecordedWhenReleaseGivesUp(t *testing.T) {
	h, req, captured, refunds := giveUpWithBufferedPayment(t, "7-relfail", 1020, storetest.Release, "pay-rf")
	assert.Empty(t, captured)
	assert.Equal(t, []string{"pay-rf"}, refunds)
	assert.Equal(t, seckill.StatusRefundPending, h.store.Status(req.OrderNo))
	assert.True(t, h.gate.Live(req.OrderNo), "the release never happened: left to the sweep")
}

// A payment that cannot be recorded fails the workflow, but a second
// payment buffered behind it is still recorded first (here it pays the
// order; the first one waits in MySQL as RECEIVED for the refund relay).
func TestUnrecordablePaymentStillDrainsTheOthers(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-drain", 1021, 1)
	h.inj.FailNext(storetest.ApplyPayment, storetest.Times(10, storetest.Transient())...) // every attempt of the first payment
	h.payDuring(storetest.ApplyPayment, payment(req, "pay-2"))
	h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-1"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, 11, h.inj.Count(storetest.ApplyPayment), "10 attempts of pay-1, then pay-2")
	captured, _ := h.store.Payments(req.OrderNo)
	assert.Equal(t, []string{"pay-2"}, captured)
	assert.Equal(t, seckill.StatusPaid, h.store.Status(req.OrderNo))
	h.assertInvariants()
}

// Creation gives up and so does the compensation (no tombstone could be
// written): a payment buffered during creation is still tried before the
// workflow fails (without a row it is refused here and stays RECEIVED in
// MySQL for the refund relay).
func TestBufferedPaymentTriedWhenCreateAndCompensationFail(t *testing.T) {
	h := newHarness(t, 2)
	req := h.admit("7-allfail", 1022, 1)
	h.inj.FailAlways(storetest.CreateOrder, storetest.Transient())
	h.inj.FailAlways(storetest.CloseOrder, storetest.Transient())
	h.payDuring(storetest.CreateOrder, payment(req, "pay-cr"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Equal(t, 1, h.inj.Count(storetest.ApplyPayment), "the buffered payment was tried")
	assert.Zero(t, h.inj.Count(storetest.Release))
}

// (11) A payment already buffered when the row comes into being — the
// webhook's signal-with-start delivers it with the start of a QUEUED order,
// or it came while CreateOrder was retrying — is applied right after the
// row exists, before the pay timer is even set: the timer can never win
// against it, not even when creating took longer than the whole pay
// timeout. On a row that cannot take it (FAILED, closed before) it is
// recorded for refund, and a closed order still gives its Redis stock back.
func TestPaymentBufferedAtCreationIsAppliedFirst(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(h *harness, req *seckill.OrderRequest)
		payments []string
		status   seckill.Status // the row at the end
		paidBy   string
		late     []string
		listed   []string
		timers   int
	}{
		{
			name:     "with the start",
			payments: []string{"pay-1"}, status: seckill.StatusPaid, paidBy: "pay-1", listed: []string{"PAID"},
		},
		{
			name:     "a duplicate delivery and a second payment with it",
			payments: []string{"pay-1", "pay-1", "pay-2"}, status: seckill.StatusPaid, paidBy: "pay-1",
			late: []string{"pay-2"}, listed: []string{"PAID"},
		},
		{
			name: "creating outlasted the pay timeout",
			setup: func(h *harness, req *seckill.OrderRequest) {
				*req = *seckill.NewOrderRequest(req.Reservation, &h.session, 5*time.Second)
				h.inj.FailNext(storetest.CreateOrder, storetest.Times(7, storetest.Transient())...)
			},
			payments: []string{"pay-1"}, status: seckill.StatusPaid, paidBy: "pay-1",
			listed: []string{"QUEUED", "WAIT_PAY", "PAID"},
		},
		{
			name: "closed before (a reset replays the creation)",
			setup: func(h *harness, req *seckill.OrderRequest) {
				h.store.Seed(req.Order(seckill.StatusClosed, time.Time{}))
			},
			payments: []string{"pay-1"}, status: seckill.StatusRefundPending, late: []string{"pay-1"},
			listed: []string{"CLOSED", "REFUND_PENDING"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 10)
			req := h.admit("7-early", 1030, 1)
			if tc.setup != nil {
				tc.setup(h, &req)
			}
			var created atomic.Bool
			h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: func(call int) {
				if call == 1 {
					for _, id := range tc.payments {
						h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, id))
					}
				}
			}, After: func(int) { created.Store(true) }})
			// Timers before the row exists are CreateOrder's retry backoffs.
			var timers []time.Duration
			h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
				if created.Load() {
					timers = append(timers, d)
				}
			})

			st := h.run(req)

			assert.Empty(t, timers, "no pay timer for an order whose payment was there")
			assert.Equal(t, tc.status, h.store.Status(req.OrderNo))
			assert.Equal(t, tc.paidBy, st.PaymentID)
			assert.Equal(t, tc.late, st.LatePayments)
			captured, refunds := h.store.Payments(req.OrderNo)
			if tc.paidBy != "" {
				assert.Equal(t, []string{tc.paidBy}, captured)
			} else {
				assert.Empty(t, captured)
			}
			assert.Equal(t, tc.late, refunds)
			h.assertFinal(tc.listed...)
		})
	}
}
