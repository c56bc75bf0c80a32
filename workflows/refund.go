package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
)

// Refund workflow and activity names.
const (
	RefundWorkflowName     = "RefundWorkflow"
	RefundPaymentActivity  = "RefundPayment"
	MarkRefundedActivity   = "MarkRefunded"
	refundProviderAttempts = 0 // unlimited: money owed is never given up on
)

// refundOptions call the payment provider: its outages can be long, and the
// refund must happen, so retries back off to a minute and never stop.
var refundOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    time.Second,
		BackoffCoefficient: 2,
		MaximumInterval:    time.Minute,
		MaximumAttempts:    refundProviderAttempts,
	},
}

// RefundResult is what a refund did.
type RefundResult struct {
	RefundID    string         `json:"refund_id"`
	OrderStatus seckill.Status `json:"order_status"`
}

// RefundWorkflow gives one payment back (ID refund:<payment_id>): the
// provider's refund (idempotent on the payment id), then REFUND_PENDING →
// REFUNDED in MySQL with a ledger row.
func RefundWorkflow(ctx workflow.Context, r seckill.Refund) (RefundResult, error) {
	ctx = workflow.WithActivityOptions(ctx, refundOptions)
	var res RefundResult
	if err := workflow.ExecuteActivity(ctx, RefundPaymentActivity, r).Get(ctx, &res.RefundID); err != nil {
		return res, err
	}
	err := workflow.ExecuteActivity(ctx, MarkRefundedActivity, r, res.RefundID).Get(ctx, &res.OrderStatus)
	return res, err
}
