package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
)

// A session runs itself: created for later, it is UPCOMING and not
// preheated; moved earlier by an operator (PATCH), its life follows and
// preheats it PreheatLead before the new start; it sells; after its end,
// once its last unpaid order closed, its Redis keys expire after
// RetainAfter and it leaves the relays' and reconcile's working set; its
// life completes, visible in Temporal. The invariants hold at the end.
func TestSessionRunsItself(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second, PreheatLead: time.Second, RetainAfter: 2 * time.Second})
	ctx := context.Background()
	cl := e.Client()
	created, err := cl.CreateSession(ctx, &seckill.Session{SKUID: 7, Title: "Later", PriceCents: 500, TotalStock: 3,
		PerUserLimit: 1, StartAt: time.Now().Add(time.Hour), EndAt: time.Now().Add(2 * time.Hour)})
	require.NoError(t, err)
	id := created.ID
	require.Equal(t, seckill.SessionUpcoming, created.State)
	_, preheated, err := e.Gate.Stock(ctx, id)
	require.NoError(t, err)
	require.False(t, preheated, "an hour before its start it is not preheated")

	// Moved to start in 3 s, end in 9 s: the life re-reads it.
	start, end := time.Now().Add(3*time.Second).Truncate(time.Millisecond), time.Now().Add(9*time.Second).Truncate(time.Millisecond)
	_, err = cl.UpdateSession(ctx, id, &seckill.SessionUpdate{StartAt: &start, EndAt: &end}, client.ChangeOptions{})
	require.NoError(t, err)
	e.Eventually(10*time.Second, "preheated by its life", func() error {
		if n, ok, err := e.Gate.Stock(ctx, id); err != nil || !ok || n != 3 {
			return fmt.Errorf("stock %d preheated %v err %v", n, ok, err)
		}
		return nil
	})
	sessions, err := e.Gate.Sessions(ctx)
	require.NoError(t, err)
	require.Contains(t, sessions, id)

	// It sells once started: one order paid, one left to time out.
	var orders [2]string
	e.Eventually(15*time.Second, "on sale", func() error {
		a, err := e.Shopper(1).Buy(ctx, id, client.BuyOptions{})
		if err != nil {
			return err
		}
		orders[0] = a.OrderNo
		return nil
	})
	b, err := e.Shopper(2).Buy(ctx, id, client.BuyOptions{})
	require.NoError(t, err)
	orders[1] = b.OrderNo
	// Paid at once (payable from the 202), well within its 2 s deadline.
	res := e.Pay(orders[0], "pay-life", "evt-life", 500)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	e.WaitStatus(e.Token(1), orders[0], 20*time.Second, seckill.StatusPaid)
	e.WaitStatus(e.Token(2), orders[1], 20*time.Second, seckill.StatusClosed)

	// After the end: out of the working set, keys gone after RetainAfter,
	// the life completed.
	e.Eventually(time.Until(end)+90*time.Second, "retired", func() error {
		ids, err := e.Gate.Sessions(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(ids, id) {
			return errors.New("still in the set of preheated sessions")
		}
		keys, err := e.Redis.Keys(ctx, fmt.Sprintf("%s:{s%d}:*", e.Prefix, id)).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			return fmt.Errorf("keys left: %v", keys)
		}
		return nil
	})
	desc, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.SessionWorkflowID(e.TaskQueue, id), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.WorkflowExecutionInfo.Status)
	view, err := cl.Session(ctx, id)
	require.NoError(t, err)
	require.Equal(t, seckill.SessionEnded, view.State)
	// The orders are still there for their shoppers, from MySQL.
	e.WaitStatus(e.Token(1), orders[0], 5*time.Second, seckill.StatusPaid)
	r := e.RequireInvariants(id)
	require.Equal(t, 2, r.DBStock)
}
