package workflows_test

// Runs recorded before a change to OrderWorkflow replay their old way: each
// workflow.GetVersion at its default version keeps the old shape (the
// recorded histories themselves replay in replay_test.go). Runs started
// with a shape that includes a change take it without asking.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/storetest"
	"github.com/seckill/seckill/workflows"
)

// Runs started before the fewer-actions version replay their old way: the
// WAIT_PAY upsert after CreateOrder, then CloseOrder and ReleaseReservation
// as two activities.
func TestFewerActionsIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("fewer-actions", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	var mu sync.Mutex
	var acts []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		defer mu.Unlock()
		acts = append(acts, info.ActivityType.Name)
	})
	req := h.admit("7-v0", 1025, 1)
	req.Shape = 0 // started by an API from before shapes

	st := h.run(req)

	h.assertCompensated(req, st, workflows.ReasonTimeout)
	assert.Equal(t, []string{"WAIT_PAY", "CLOSED"}, h.statuses())
	assert.Equal(t, []string{activities.CloseOrderName, activities.ReleaseReservationName}, acts)
	h.assertInvariants()
}

// Runs recorded before the drain on failure replay their old way: at the
// default version a failing compensation returns at once.
func TestDrainOnFailureIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("drain-payments-on-failure", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	req := h.admit("7-oldrun", 1023, 1)
	req.Shape = 0 // started by an API from before shapes
	h.inj.FailAlways(storetest.CloseOrder, storetest.Transient())
	h.payDuring(storetest.CloseOrder, payment(req, "pay-old"))

	h.execute(req)

	require.Error(t, h.env.GetWorkflowError())
	assert.Zero(t, h.inj.Count(storetest.ApplyPayment))
}

// Runs recorded before payBufferedVersion replay their old way: the pay
// timer is set first, and the payment comes from the selector after it.
func TestPayBufferedFirstIsVersioned(t *testing.T) {
	h := newHarness(t, 10)
	h.env.OnGetVersion("pay-buffered-first", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	req := h.admit("7-oldpay", 1031, 1)
	req.Shape = 0 // started by an API from before shapes
	h.inj.On(storetest.CreateOrder, storetest.Hooks{Before: func(int) { h.env.SignalWorkflow(workflows.PaymentSignal, payment(req, "pay-old")) }})
	var timers []time.Duration
	h.env.SetOnTimerScheduledListener(func(_ string, d time.Duration) { timers = append(timers, d) })

	st := h.run(req)

	assert.Equal(t, seckill.StatusPaid, st.Status)
	assert.Equal(t, []time.Duration{payTimeout}, timers)
	h.assertInvariants()
}

// A run started with the current shape takes every change without asking
// GetVersion (no marker, no TemporalChangeVersion upsert); a run started
// without a shape asks for each change it meets, and takes it.
func TestShapedRunAsksNoVersion(t *testing.T) {
	for _, shape := range []int{seckill.OrderShape, 0} {
		h := newHarness(t, 10)
		var asked []string
		for _, change := range []string{"fewer-actions", "pay-buffered-first", "drain-payments-on-failure", "local-steps"} {
			h.env.OnGetVersion(change, workflow.DefaultVersion, 1).Run(func(mock.Arguments) {
				asked = append(asked, change)
			}).Return(workflow.Version(1))
		}
		req := h.admit("7-shape", 1032, 1)
		req.Shape = shape
		h.signalAt(time.Minute, workflows.PaymentSignal, payment(req, "pay-shape"))

		st := h.run(req)

		assert.Equal(t, seckill.StatusPaid, st.Status)
		if shape > 0 {
			assert.Empty(t, asked, "shape %d", shape)
		} else {
			assert.Equal(t, []string{"fewer-actions", "local-steps"}, asked)
		}
		h.assertInvariants()
	}
}
