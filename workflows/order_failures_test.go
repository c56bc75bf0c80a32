package workflows_test

// Orders that do not get the normal run: the workflow cancelled at any
// step, the database refusing an order Redis admitted, creation ending in
// an error before any row exists.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/workflows"
)

// cancelUntilClosed is a store hook that cancels the workflow and then
// holds the call it runs in until a CloseOrder (the compensation) finished.
func cancelUntilClosed(h *harness) func(int) {
	return func(int) {
		h.env.CancelWorkflow()
		h.waitFor("CloseOrder", func() bool { return h.inj.Finished(storetest.CloseOrder) > 0 })
	}
}

// (7) Cancelling the workflow (ops, or a terminate-by-cancel) never leaks
// stock: compensation runs on a disconnected context wherever the
// cancellation lands, and a decision already made (a payment) stands.
func TestOrderWorkflowCancellation(t *testing.T) {
	cases := []struct {
		name      string
		setup     func(h *harness, req seckill.OrderRequest)
		status    seckill.Status
		reason    string
		taken     int // DB stock ever taken (and, if closed, given back)
		lateWrite bool
	}{
		{
			name: "while waiting for the payment",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 5*time.Minute)
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 2,
		},
		{
			name: "while CreateOrder runs, its row committed first",
			setup: func(h *harness, _ seckill.OrderRequest) {
				// The workflow abandons this attempt and compensates.
				h.inj.On(storetest.CreateOrder, storetest.Hooks{After: cancelUntilClosed(h)})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 2, lateWrite: true,
		},
		{
			name: "while CreateOrder runs, the tombstone first",
			setup: func(h *harness, _ seckill.OrderRequest) {
				// The straggling insert reaches the database only after the
				// compensation wrote the tombstone.
				h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: cancelUntilClosed(h)})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonWorkflowStopped, taken: 0, lateWrite: true,
		},
		{
			name: "during the compensation of a timeout",
			setup: func(h *harness, _ seckill.OrderRequest) {
				h.inj.On(storetest.CloseOrder, storetest.Hooks{Before: func(int) { h.env.CancelWorkflow() }})
			},
			status: seckill.StatusClosed, reason: workflows.ReasonTimeout, taken: 2,
		},
		{
			name: "while the payment is being applied",
			setup: func(h *harness, req seckill.OrderRequest) {
				h.signalAt(3*time.Minute, workflows.PaymentSignal, payment(req, "pay-c"))
				h.inj.On(storetest.ApplyPayment, storetest.Hooks{Before: func(int) { h.env.CancelWorkflow() }})
			},
			status: seckill.StatusPaid, taken: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 8)
			req := h.admit("7-wfcancel", 1012, 2)
			tc.setup(h, req)

			st := h.run(req)
			if tc.lateWrite {
				// The abandoned CreateOrder attempt and its cache publish
				// finish on their own goroutine.
				require.Eventually(t, func() bool {
					return h.inj.Finished(storetest.CreateOrder) == 1 && h.inj.Finished(storetest.PutOrder) == 2
				}, 10*time.Second, time.Millisecond)
			}

			assert.Equal(t, tc.status, st.Status)
			assert.Equal(t, tc.status, h.store.Status(req.OrderNo))
			dec, _ := h.store.Counts(req.OrderNo)
			assert.Equal(t, tc.taken, dec)
			if tc.status == seckill.StatusClosed {
				h.assertCompensated(req, st, tc.reason)
			} else {
				assert.Zero(t, h.inj.Count(storetest.CloseOrder))
				assert.Zero(t, h.inj.Count(storetest.Release))
				assert.Equal(t, "pay-c", st.PaymentID)
			}
			h.assertInvariants()
		})
	}
}

// (8) MySQL refuses an order Redis admitted (drift: Redis lost an order the
// database still holds): the order ends FAILED with no compensation and no
// Redis release (the drift is left for reconcile), and a payment that came
// meanwhile is queued for its refund.
func TestOrderCreateRefusedEndsFailed(t *testing.T) {
	h := newHarness(t, 3)
	other := seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: "7-other", SessionID: testSession,
		UserID: 2000, Quantity: 3}, PriceCents: testPrice}
	h.store.Seed(other.Order(seckill.StatusWaitPay, startTime.Add(payTimeout)))
	req := h.admit("7-drift", 1013, 1)
	p := payment(req, "pay-f")
	h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, p) }})

	st := h.run(req)

	assert.Equal(t, seckill.StatusFailed, st.Status)
	assert.Empty(t, st.CloseReason)
	assert.Empty(t, st.PaymentID)
	assert.Equal(t, []string{"pay-f"}, st.LatePayments)
	assert.Equal(t, seckill.StatusFailed, h.store.Status(req.OrderNo))
	captured, refunds := h.store.Payments(req.OrderNo)
	assert.Empty(t, captured)
	assert.Equal(t, []string{"pay-f"}, refunds)
	assert.Zero(t, h.inj.Count(storetest.CloseOrder), "a FAILED order has nothing to close")
	assert.Zero(t, h.inj.Count(storetest.Release), "Redis stock is not restored for a FAILED order")
	assert.True(t, h.gate.Live(req.OrderNo))
	assert.Zero(t, h.store.StockLeft())
	h.assertFinal("FAILED")
}

// (9) CreateOrder ends in an error — a non-retryable refusal, or the
// activity was cancelled — before any row exists: the workflow writes a
// CLOSED tombstone (no stock moves) and releases the Redis reservation; a
// straggling create can never take stock afterwards.
func TestOrderCreateErrorCompensatesWithTombstone(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(h *harness)
		reason string
		calls  int // CreateOrder attempts that reached the store
	}{
		{
			name: "non-retryable refusal",
			setup: func(h *harness) {
				h.inj.FailNext(storetest.CreateOrder, storetest.Fault{Err: seckill.Errorf(seckill.EINVALID, "injected: bad order")})
			},
			reason: workflows.ReasonCreateFailed, calls: 1,
		},
		{
			name: "activity cancelled",
			setup: func(h *harness) {
				h.env.OnActivity(activities.CreateOrderName, mock.Anything, mock.Anything).
					Return(activities.CreateOrderResult{}, temporal.NewCanceledError("injected"))
			},
			reason: workflows.ReasonWorkflowStopped, calls: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 4)
			req := h.admit("7-tomb", 1014, 2)
			tc.setup(h)

			st := h.run(req)

			assert.Equal(t, tc.calls, h.inj.Count(storetest.CreateOrder), "a refusal is not retried")
			h.assertCompensated(req, st, tc.reason)
			late, err := h.store.CreateOrder(context.Background(), &req, st.PayDeadline)
			require.NoError(t, err)
			assert.Equal(t, seckill.StatusClosed, late.Status, "tombstone")
			dec, res := h.store.Counts(req.OrderNo)
			assert.Zero(t, dec)
			assert.Zero(t, res)
			h.assertFinal("CLOSED")
		})
	}
}
