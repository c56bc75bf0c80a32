package temporal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/workflows"
)

// PayWithStart (the webhook's signal-with-start) on the dev server: it
// starts the workflow of an order that has none yet, with the options of
// Orders.Start (search attributes, memo), and the order ends PAID; on a
// running workflow it only signals (the same run); on a finished one it is
// NOT_FOUND and starts nothing. A paid order started this way costs fewer
// actions than one started first and paid later (no pay timer).
func TestPayWithStart(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(3, 1, 100)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	admit := func(path string, user int64) *seckill.OrderRequest {
		// Workflow IDs outlive the test database: the number must be new.
		no := fmt.Sprintf("%d-sws%d-%s", sess.ID, stamp, path)
		resv, _, err := e.Gate.Admit(ctx, sess, user, 1, no, "trace-sws-"+path, time.Now())
		require.NoError(t, err)
		return seckill.NewOrderRequest(*resv, sess, time.Hour)
	}
	pay := func(req *seckill.OrderRequest, id string) *seckill.Payment {
		return &seckill.Payment{EventID: "ev-" + id, PaymentID: id, OrderNo: req.OrderNo, AmountCents: 100, TraceID: "trace-pay"}
	}
	final := func(no string) workflows.OrderState {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var st workflows.OrderState
		require.NoError(t, e.Temporal.GetWorkflow(cctx, temporal.WorkflowID(no), "").Get(cctx, &st))
		return st
	}

	// Not started yet: signal-with-start starts it, and it is PAID.
	early := admit("early", 1)
	require.NoError(t, e.Orders.PayWithStart(ctx, early, pay(early, "pay-early-"+fmt.Sprint(stamp))))
	st := final(early.OrderNo)
	require.Equal(t, seckill.StatusPaid, st.Status)
	d, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(early.OrderNo), "")
	require.NoError(t, err)
	info := d.GetWorkflowExecutionInfo()
	require.Equal(t, e.TaskQueue, info.GetTaskQueue())
	sa := info.GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa["TraceID"].GetData()), "trace-sws-early")
	require.Contains(t, string(sa["SessionID"].GetData()), fmt.Sprint(sess.ID))
	require.Contains(t, string(sa["UserID"].GetData()), "1")
	var trace string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(info.GetMemo().GetFields()["trace_id"], &trace))
	require.Equal(t, "trace-sws-early", trace)
	c, err := temporal.OrderCost(ctx, e.Temporal, early.OrderNo)
	require.NoError(t, err)
	t.Logf("paid by signal-with-start: %d actions %v, %d events", c.Actions, c.ByKind, c.Events)
	record(t, e, early.OrderNo)
	// start with its signal · CreateOrder and ApplyPayment (local
	// activities of one workflow task: one action) · OrderStatus=PAID: the
	// payment was there before the timer.
	require.Equal(t, map[string]int{"start": 1, "local_activities": 1,
		"search_attribute_upserts": 1}, c.ByKind)
	require.Equal(t, 3, c.Actions)

	// Finished: never started again, the caller records the payment.
	again := pay(early, "pay-again-"+fmt.Sprint(stamp))
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(e.Orders.PayWithStart(ctx, early, again)))
	d2, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(early.OrderNo), "")
	require.NoError(t, err)
	require.Equal(t, info.GetExecution().GetRunId(), d2.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "no second run")

	// Running: the same run only gets the signal.
	running := admit("running", 2)
	started, err := e.Orders.Start(ctx, running)
	require.NoError(t, err)
	require.True(t, started)
	run := e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(running.OrderNo), "")
	require.NoError(t, e.Orders.PayWithStart(ctx, running, pay(running, "pay-running-"+fmt.Sprint(stamp))))
	require.Equal(t, seckill.StatusPaid, final(running.OrderNo).Status)
	d3, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(running.OrderNo), "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), d3.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	started, err = e.Orders.Start(ctx, running)
	require.NoError(t, err)
	require.False(t, started)

	e.RequireInvariants(sess.ID)
}
