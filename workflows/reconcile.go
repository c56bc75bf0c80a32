package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

// ReconcileWorkflowName is the reconcile workflow's registered name.
const ReconcileWorkflowName = "ReconcileWorkflow"

// reconciler names the reconcile activity by method value (see steps).
var reconciler *activities.Reconciler

// ReconcileWorkflow runs reconcile over every preheated session; a Temporal
// Schedule starts it periodically, so ops find each run, its reports and
// any broken invariant in the Web UI. It fails (red in the UI) when a
// session's report is not ok: drift, stuck orders, a session on sale
// without its Redis state, or a broken invariant.
func ReconcileWorkflow(ctx workflow.Context) ([]seckill.Report, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var reports []seckill.Report
	if err := workflow.ExecuteActivity(ctx, reconciler.ReconcileAll).Get(ctx, &reports); err != nil {
		return nil, err
	}
	var broken []int64
	for _, r := range reports {
		if !r.OK {
			broken = append(broken, r.SessionID)
			workflow.GetLogger(ctx).Error("reconcile: session not ok", "session_id", r.SessionID, "problems", r.Problems)
		}
	}
	if len(broken) > 0 {
		return reports, temporal.NewNonRetryableApplicationError("invariants broken", "RECONCILE_DRIFT", nil, broken)
	}
	return reports, nil
}
