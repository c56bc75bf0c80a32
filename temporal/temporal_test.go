package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
	"github.com/seckill/seckill/worker"
	"github.com/seckill/seckill/workflows"
)

// One workflow per order: a second start of the same order number (a relay
// or retry racing the API) is detected and reported, never doubled — also
// after the first workflow finished.
func TestDuplicateStartIsDetected(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(3, 1, 100)
	ctx := context.Background()
	// Workflow IDs outlive the test database: the order number must be new
	// on this Temporal server.
	no := fmt.Sprintf("%d-dup%d", sess.ID, time.Now().UnixNano())
	resv, _, err := e.Gate.Admit(ctx, sess, 1, 1, no, "trace-dup", time.Now())
	require.NoError(t, err)
	resv.SKUID = sess.SKUID
	req := &seckill.OrderRequest{Reservation: *resv, PriceCents: 100, PayTimeout: time.Minute}

	started, err := e.Orders.Start(ctx, req)
	require.NoError(t, err)
	require.True(t, started)
	started, err = e.Orders.Start(ctx, req)
	require.NoError(t, err)
	require.False(t, started, "second start must be detected")

	e.Eventually(20*time.Second, "WAIT_PAY", func() error {
		st, err := e.Orders.State(ctx, no)
		if err != nil {
			return err
		}
		if st.Status != seckill.StatusWaitPay {
			return errStatus(st.Status)
		}
		return nil
	})
	require.NoError(t, e.Orders.Cancel(ctx, no, "trace-cancel"))
	run := e.Temporal.GetWorkflow(ctx, temporal.WorkflowID(no), "")
	var final workflows.OrderState
	require.NoError(t, run.Get(ctx, &final))
	require.Equal(t, seckill.StatusClosed, final.Status)

	started, err = e.Orders.Start(ctx, req)
	require.NoError(t, err)
	require.False(t, started, "a finished order's workflow is never started again")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(e.Orders.Cancel(ctx, no, "t")))

	// The search attributes let ops find it.
	d, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(no), "")
	require.NoError(t, err)
	sa := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
	require.Contains(t, string(sa["OrderStatus"].GetData()), "CLOSED")
	require.Contains(t, string(sa["TraceID"].GetData()), "trace-dup")
	e.RequireInvariants(sess.ID)
}

type errStatus seckill.Status

func (e errStatus) Error() string { return "status " + string(e) }

// The periodic reconcile is a Temporal Schedule: triggered, it runs
// ReconcileWorkflow over every preheated session and reports them.
func TestReconcileSchedule(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(3, 1, 100)
	ctx := context.Background()
	id := "test-reconcile-" + e.TaskQueue
	require.NoError(t, worker.EnsureReconcileSchedule(ctx, e.Temporal, id, e.TaskQueue, time.Hour))
	require.NoError(t, worker.EnsureReconcileSchedule(ctx, e.Temporal, id, e.TaskQueue, time.Hour), "idempotent")
	h := e.Temporal.ScheduleClient().GetHandle(ctx, id)
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var runID string
	e.Eventually(20*time.Second, "scheduled run", func() error {
		d, err := h.Describe(ctx)
		if err != nil {
			return err
		}
		if len(d.Info.RecentActions) == 0 {
			return fmt.Errorf("no run yet")
		}
		runID = d.Info.RecentActions[0].StartWorkflowResult.WorkflowID
		return nil
	})
	var reports []seckill.Report
	require.NoError(t, e.Temporal.GetWorkflow(ctx, runID, "").Get(ctx, &reports))
	require.Len(t, reports, 1)
	require.Equal(t, sess.ID, reports[0].SessionID)
	require.True(t, reports[0].OK, "%v", reports[0].Problems)
}

// The scheduled reconcile fails (red in the Web UI) when a session on sale
// lost its Redis state, and names the session.
func TestScheduledReconcileFailsWhenASessionLostItsRedisState(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(3, 1, 100)
	ctx := context.Background()
	keys, err := e.Redis.Keys(ctx, fmt.Sprintf("%s:{s%d}:*", e.Prefix, sess.ID)).Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	require.NoError(t, e.Redis.Del(ctx, keys...).Err())

	run, err := e.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: e.TaskQueue}, workflows.ReconcileWorkflowName)
	require.NoError(t, err)
	err = run.Get(ctx, nil)
	var appErr *sdktemporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, "RECONCILE_DRIFT", appErr.Type())
	var broken []int64
	require.NoError(t, appErr.Details(&broken))
	require.Equal(t, []int64{sess.ID}, broken)
}

// The Web UI recipes of the README work: the list filters on the search
// attributes find exactly the right orders (unpaid orders of one session,
// one shopper's orders, one purchase by its trace id), on the dev server and
// on the durable server's SQL visibility (PostgreSQL) alike; on the durable
// server also through its Web UI's own API (the ui-server of
// deploy/temporal/ui.yaml), which is what the UI's filter box calls.
func TestOpsQueriesFindTheRightOrders(t *testing.T) {
	t.Run("dev server", func(t *testing.T) {
		opsQueries(t, testenv.New(t, testenv.Options{NoAPI: true}), "")
	})
	t.Run("durable server", func(t *testing.T) {
		srv := testenv.StartDurableTemporalServer(t)
		ui := srv.StartUI()
		opsQueries(t, testenv.New(t, testenv.Options{NoAPI: true, TemporalAddr: srv.Addr}), ui)
	})
}

// uiList lists workflow IDs through the Web UI server's API at base.
func uiList(base, query string) ([]string, error) {
	resp, err := http.Get(base + "/api/v1/namespaces/default/workflows?query=" + url.QueryEscape(query))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("web UI list: %s", resp.Status)
	}
	var body struct {
		Executions []struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		} `json:"executions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var ids []string
	for _, x := range body.Executions {
		ids = append(ids, x.Execution.WorkflowID)
	}
	return ids, nil
}

// opsQueries runs the recipes on e's Temporal server, and through the Web
// UI at ui unless it is "".
func opsQueries(t *testing.T, e *testenv.Env, ui string) {
	a, b := e.Session(5, 2, 100), e.Session(5, 2, 100)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	user := stamp % 1_000_000_000 // unique on this shared Temporal server
	start := func(s *seckill.Session, u int64, n int) string {
		no := fmt.Sprintf("%d-ops%d-%d", s.ID, stamp, n)
		resv, _, err := e.Gate.Admit(ctx, s, u, 1, no, fmt.Sprintf("trace-ops-%d-%d", stamp, n), time.Now())
		require.NoError(t, err)
		resv.SKUID = s.SKUID
		_, err = e.Orders.Start(ctx, &seckill.OrderRequest{Reservation: *resv, PriceCents: 100, PayTimeout: time.Hour})
		require.NoError(t, err)
		return no
	}
	a1, a2, b1 := start(a, user, 1), start(a, user+1, 2), start(b, user, 3)
	// One of session a's orders gets paid: it must drop out of "unpaid".
	e.Eventually(20*time.Second, "WAIT_PAY", func() error {
		st, err := e.Orders.State(ctx, a2)
		if err != nil || st.Status != seckill.StatusWaitPay {
			return fmt.Errorf("%v %v", st, err)
		}
		return nil
	})
	require.NoError(t, e.Orders.Pay(ctx, &seckill.Payment{EventID: "ev-" + a2, PaymentID: "pay-" + a2, OrderNo: a2, AmountCents: 100, TraceID: "t"}))

	// Visibility is eventually consistent: each recipe is retried until it
	// lists exactly the orders it must (a start's record may land after an
	// earlier query already saw another's).
	expect := func(query string, want ...string) {
		e.Eventually(20*time.Second, query, func() error {
			resp, err := e.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: query})
			if err != nil {
				return err
			}
			var got []string
			for _, x := range resp.GetExecutions() {
				got = append(got, x.GetExecution().GetWorkflowId())
			}
			slices.Sort(got)
			if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
				return fmt.Errorf("listed %v, want %v", got, w)
			}
			return nil
		})
	}
	q := fmt.Sprintf("WorkflowType = 'OrderWorkflow' AND TaskQueue = '%s'", e.TaskQueue)
	expect(q+fmt.Sprintf(" AND SessionID = %d AND OrderStatus = 'WAIT_PAY'", a.ID), temporal.WorkflowID(a1))
	expect(q+fmt.Sprintf(" AND UserID = %d", user), temporal.WorkflowID(a1), temporal.WorkflowID(b1))
	expect(q+fmt.Sprintf(" AND TraceID = 'trace-ops-%d-3'", stamp), temporal.WorkflowID(b1))
	if ui != "" {
		unpaid, err := uiList(ui, q+fmt.Sprintf(" AND SessionID = %d AND OrderStatus = 'WAIT_PAY'", a.ID))
		require.NoError(t, err)
		require.Equal(t, []string{temporal.WorkflowID(a1)}, unpaid, "the Web UI lists the unpaid orders of session %d", a.ID)
		mine, err := uiList(ui, q+fmt.Sprintf(" AND UserID = %d", user))
		require.NoError(t, err)
		require.ElementsMatch(t, []string{temporal.WorkflowID(a1), temporal.WorkflowID(b1)}, mine, "the Web UI lists one shopper's orders")
	}
	for _, no := range []string{a1, b1} {
		e.Eventually(20*time.Second, no+" WAIT_PAY", func() error {
			if st, err := e.Orders.State(ctx, no); err != nil || st.Status != seckill.StatusWaitPay {
				return fmt.Errorf("%v %v", st, err)
			}
			return nil
		})
	}
	e.RequireInvariants(a.ID)
	e.RequireInvariants(b.ID)
}
