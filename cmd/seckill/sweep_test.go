package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/sweep"
	"github.com/seckill/seckill/temporal"
)

// `seckill worker` runs the sweep: an order whose workflow was terminated
// while it waited for payment is closed by the worker once its deadline +
// SECKILL_SWEEP_GRACE has passed, stock back in both stores.
func TestWorkerSweepsAnOrderWhoseWorkflowIsGone(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true, Temporal: true})
	sess := e.Session(2, 1, 100)
	ctx := context.Background()
	e.Spawn(e.ProcessEnv("SECKILL_PAY_TIMEOUT=6s", "SECKILL_SWEEP_GRACE=100ms"), "worker")

	no := fmt.Sprintf("%d-gone-%d", sess.ID, time.Now().UnixNano()) // unique on the shared Temporal server
	resv, _, err := e.Gate.Admit(ctx, sess, 1, 1, no, "trace-gone", time.Now())
	require.NoError(t, err)
	resv.SKUID = sess.SKUID
	started, err := e.Orders.Start(ctx, &seckill.OrderRequest{Reservation: *resv, PriceCents: 100, PayTimeout: 6 * time.Second})
	require.NoError(t, err)
	require.True(t, started)
	require.NoError(t, e.Gate.Started(ctx, sess.ID, no))
	e.Eventually(20*time.Second, "WAIT_PAY", func() error {
		if o, err := e.DB.Order(ctx, no); err != nil || o.Status != seckill.StatusWaitPay {
			return fmt.Errorf("%v %v", o, err)
		}
		return nil
	})
	require.NoError(t, e.Temporal.TerminateWorkflow(ctx, temporal.WorkflowID(no), "", "lost"))

	e.Eventually(30*time.Second, "swept", func() error {
		if r := e.Reconcile(sess.ID); r.Orders[seckill.StatusClosed] != 1 || r.InFlight != 0 {
			return fmt.Errorf("orders %v, in flight %d", r.Orders, r.InFlight)
		}
		return nil
	})
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer db.Close()
	var reason, traceID string
	require.NoError(t, db.QueryRow("SELECT reason, trace_id FROM order_ledger WHERE order_no = ? AND to_status = 'CLOSED'", no).Scan(&reason, &traceID))
	require.Equal(t, sweep.Reason, reason, "closed by the sweep, not by the workflow")
	require.Equal(t, "trace-gone", traceID)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 2, rep.DBStock)
	require.Equal(t, 2, rep.RedisStock)
}

// SECKILL_SWEEP_GRACE defaults to a minute; it must be a positive duration.
func TestSweepGraceConfig(t *testing.T) {
	t.Setenv("SECKILL_SWEEP_GRACE", "")
	os.Unsetenv("SECKILL_SWEEP_GRACE")
	c, err := app.LoadConfig()
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.SweepGrace)
	for _, bad := range []string{"0", "-1s", "soon"} {
		t.Setenv("SECKILL_SWEEP_GRACE", bad)
		_, err := app.LoadConfig()
		require.Error(t, err, bad)
	}
}
