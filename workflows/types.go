// Package workflows holds OrderWorkflow, the durable saga of one order:
// create the row, wait for the payment against the pay timer, and on timeout
// or cancellation compensate exactly once. It is deterministic code only: no
// I/O, no clocks but the workflow's, no imports of the adapters. Activities
// are called by method value on a nil pointer (var a *activities.Activities;
// workflow.ExecuteActivity(ctx, a.CloseAndRelease, in)), with the input and
// result types declared next to them in package activities; the worker
// registers each under its method's name.
package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// Registered names. They are part of every recorded history: renaming one
// breaks replay of running orders.
const (
	OrderWorkflowName = "OrderWorkflow"

	// PaymentSignal carries a seckill.Payment from the webhook.
	PaymentSignal = "payment"
	// CancelSignal carries a CancelRequest from the shopper or ops.
	CancelSignal = "cancel"
	// StateQuery returns the workflow's OrderState.
	StateQuery = "state"
)

// Search attributes for ops in the Web UI; registered where the server is
// started, checked by the worker at start.
var (
	OrderStatusKey = temporal.NewSearchAttributeKeyKeyword("OrderStatus")
	SessionIDKey   = temporal.NewSearchAttributeKeyInt64("SessionID")
	UserIDKey      = temporal.NewSearchAttributeKeyInt64("UserID")
	TraceIDKey     = temporal.NewSearchAttributeKeyKeyword("TraceID")
)

// SearchAttributes are the attributes an order's workflow starts with.
// Attributes given at the start are free, an upsert is a billable action:
// the order is listed WAIT_PAY from the start, since its row is created in
// the workflow's first task (the workflow lists it QUEUED if creating it
// takes long).
func SearchAttributes(req *seckill.OrderRequest) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(
		OrderStatusKey.ValueSet(string(seckill.StatusWaitPay)),
		SessionIDKey.ValueSet(req.SessionID),
		UserIDKey.ValueSet(req.UserID),
		TraceIDKey.ValueSet(req.TraceID),
	)
}

// CancelRequest asks an unpaid order to close. Reason says who asked
// ("shopper", "ops"); both fields are logged, never decided on.
type CancelRequest struct {
	Reason  string `json:"reason"`
	TraceID string `json:"trace_id"`
}

// OrderState is what the state query returns.
type OrderState struct {
	OrderNo     string         `json:"order_no"`
	Status      seckill.Status `json:"status"`
	PayDeadline time.Time      `json:"pay_deadline"`
	PaymentID   string         `json:"payment_id,omitempty"`
	CloseReason string         `json:"close_reason,omitempty"`
	// LatePayments are payments that came when the order could not take
	// them; each waits for its refund.
	LatePayments []string `json:"late_payments,omitempty"`
}

// Close reasons.
const (
	ReasonTimeout         = "pay_timeout"
	ReasonCancelled       = "cancelled"
	ReasonWorkflowStopped = "workflow_cancelled"
	ReasonCreateFailed    = "create_failed"
)
