package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

// RefundWorkflowName is the refund workflow's registered name.
const RefundWorkflowName = "RefundWorkflow"

// refundSteps names the refund activities by method value (see steps).
var refundSteps *activities.Refunds

// refundProviderOptions call the payment provider. One refund run rides
// out a blip (three tries over a few seconds) and no more: a longer
// provider outage is waited out between runs, with the backoff and the
// parking persisted in MySQL (seckill.RefundRetry), where ops can see it.
var refundProviderOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Second,
		MaximumAttempts:    3,
	},
}

// refundStoreOptions record the outcome in MySQL: once the provider moved
// the money, that must be written down, through any outage ops can fix.
var refundStoreOptions = compensationOptions

// RefundResult is what a refund did.
type RefundResult struct {
	RefundID    string         `json:"refund_id"`
	OrderStatus seckill.Status `json:"order_status"`
}

// refundFailureVersion guards recording a failed run: before it, the
// provider call retried forever inside one run.
const refundFailureVersion = "refund-failure-recorded"

// RefundWorkflow gives one payment back (ID refund:<payment_id>): the
// provider's refund (idempotent on the payment id), then REFUND_PENDING →
// REFUNDED in MySQL with a ledger row. A run whose provider call fails
// records the failure (the next run's time, or parking) and fails; the
// refund relay starts the next run when it is due, under the same id.
func RefundWorkflow(ctx workflow.Context, r seckill.Refund) (RefundResult, error) {
	pctx := workflow.WithActivityOptions(ctx, refundProviderOptions)
	sctx := workflow.WithActivityOptions(ctx, refundStoreOptions)
	var res RefundResult
	if err := workflow.ExecuteActivity(pctx, refundSteps.RefundPayment, r).Get(pctx, &res.RefundID); err != nil {
		if workflow.GetVersion(ctx, refundFailureVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return res, err
		}
		var st seckill.RefundState
		if rerr := workflow.ExecuteActivity(sctx, refundSteps.RecordRefundFailure,
			activities.RefundFailure{Refund: r, Error: failureText(err)}).Get(sctx, &st); rerr != nil {
			workflow.GetLogger(ctx).Error("refund failure not recorded", "payment_id", r.PaymentID, "error", rerr)
		}
		return res, err
	}
	err := workflow.ExecuteActivity(sctx, refundSteps.MarkRefunded, r, res.RefundID).Get(sctx, &res.OrderStatus)
	return res, err
}

// failureText is what ops read as a refund's last error: the provider's
// message, without the activity error's wrapping.
func failureText(err error) string {
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app):
		return app.Error()
	case errors.As(err, &timeout):
		return "provider call timed out (" + timeout.TimeoutType().String() + ")"
	default:
		return err.Error()
	}
}
