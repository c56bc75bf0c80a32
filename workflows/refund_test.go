package workflows_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/workflows"
)

func refundEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.RefundWorkflow, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, seckill.Refund) (string, error) { return "", nil },
		activity.RegisterOptions{Name: activities.RefundPaymentName})
	env.RegisterActivityWithOptions(func(context.Context, seckill.Refund, string) (seckill.Status, error) { return "", nil },
		activity.RegisterOptions{Name: activities.MarkRefundedName})
	env.RegisterActivityWithOptions(func(context.Context, activities.RefundFailure) (seckill.RefundState, error) {
		return seckill.RefundState{}, nil
	}, activity.RegisterOptions{Name: activities.RecordRefundFailureName})
	return env
}

var testRefund = seckill.Refund{PaymentID: "pay-1", OrderNo: "7-1", AmountCents: 100}

// A refund run whose provider call fails past the run's few tries records
// the failure (for the backoff or the parking) with the provider's message,
// and fails: the relay starts the next run when it is due.
func TestRefundRunRecordsItsFailure(t *testing.T) {
	env := refundEnv(t)
	env.OnActivity(activities.RefundPaymentName, mock.Anything, testRefund).Return("", errors.New("provider: 503"))
	var got activities.RefundFailure
	env.OnActivity(activities.RecordRefundFailureName, mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		got = args.Get(1).(activities.RefundFailure)
	}).Return(seckill.RefundState{State: seckill.RefundDue, Attempts: 1}, nil)

	env.ExecuteWorkflow(workflows.RefundWorkflowName, testRefund)

	require.True(t, env.IsWorkflowCompleted())
	require.ErrorContains(t, env.GetWorkflowError(), "provider: 503")
	require.Equal(t, testRefund, got.Refund)
	require.Equal(t, "provider: 503", got.Error)
	env.AssertNotCalled(t, "MarkRefunded", mock.Anything, mock.Anything, mock.Anything)
}

// A refund that goes through is marked refunded; no failure is recorded.
func TestRefundRunMarksRefunded(t *testing.T) {
	env := refundEnv(t)
	env.OnActivity(activities.RefundPaymentName, mock.Anything, testRefund).Return("re-1", nil)
	env.OnActivity(activities.MarkRefundedName, mock.Anything, testRefund, "re-1").Return(seckill.StatusRefunded, nil)

	env.ExecuteWorkflow(workflows.RefundWorkflowName, testRefund)

	require.NoError(t, env.GetWorkflowError())
	var res workflows.RefundResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, workflows.RefundResult{RefundID: "re-1", OrderStatus: seckill.StatusRefunded}, res)
}

// Runs started before failures were recorded replay their old way.
func TestRefundFailureRecordingIsVersioned(t *testing.T) {
	env := refundEnv(t)
	env.OnGetVersion("refund-failure-recorded", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	env.OnActivity(activities.RefundPaymentName, mock.Anything, testRefund).Return("", errors.New("provider: 503"))
	recorded := false
	env.OnActivity(activities.RecordRefundFailureName, mock.Anything, mock.Anything).Run(func(mock.Arguments) {
		recorded = true
	}).Return(seckill.RefundState{}, nil)

	env.ExecuteWorkflow(workflows.RefundWorkflowName, testRefund)

	require.Error(t, env.GetWorkflowError())
	require.False(t, recorded)
}
