// Package workflows holds OrderWorkflow, the durable saga of one order:
// create the row, wait for the payment against the pay timer, and on timeout
// or cancellation compensate exactly once. It is deterministic code only: no
// I/O, no clocks but the workflow's, no imports of the adapters. Activities
// are called by their registered names with the types declared here.
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

	CreateOrderActivity        = "CreateOrder"
	ApplyPaymentActivity       = "ApplyPayment"
	CloseOrderActivity         = "CloseOrder"
	ReleaseReservationActivity = "ReleaseReservation"
	// CloseAndReleaseActivity is CloseOrder then ReleaseReservation in one
	// activity (runs since the fewer-actions version).
	CloseAndReleaseActivity = "CloseAndRelease"

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

// CancelRequest asks an unpaid order to close.
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

// CreateOrderInput is the input of the CreateOrder activity.
type CreateOrderInput struct {
	Request     seckill.OrderRequest `json:"request"`
	PayDeadline time.Time            `json:"pay_deadline"`
}

// CreateOrderResult tells the status the order row has after CreateOrder:
// WAIT_PAY, or FAILED when the database refused it (then Reason says why);
// another status when the order was already decided before (a retry).
type CreateOrderResult struct {
	Status seckill.Status `json:"status"`
}

// PaymentResult is the result of the ApplyPayment activity.
type PaymentResult struct {
	Outcome seckill.PaymentOutcome `json:"outcome"`
	Status  seckill.Status         `json:"status"`
}

// CloseOrderInput is the input of the CloseOrder activity.
type CloseOrderInput struct {
	Request seckill.OrderRequest `json:"request"`
	Reason  string               `json:"reason"`
}

// CloseOrderResult tells the order's status after the close and whether
// this close gave the database stock back.
type CloseOrderResult struct {
	Status   seckill.Status `json:"status"`
	GaveBack bool           `json:"gave_back"`
}

// CloseAndReleaseResult is the result of the CloseAndRelease activity:
// the close's result and the units given back in Redis (0 when the order
// was not closed, or was released before).
type CloseAndReleaseResult struct {
	Status   seckill.Status `json:"status"`
	GaveBack bool           `json:"gave_back"`
	Released int            `json:"released"`
}

// ReleaseInput names the reservation to give back in Redis.
type ReleaseInput struct {
	SessionID int64  `json:"session_id"`
	OrderNo   string `json:"order_no"`
	// TraceID is for the activity's logs only (absent in older histories).
	TraceID string `json:"trace_id,omitempty"`
}

// Close reasons.
const (
	ReasonTimeout         = "pay_timeout"
	ReasonCancelled       = "cancelled"
	ReasonWorkflowStopped = "workflow_cancelled"
	ReasonCreateFailed    = "create_failed"
)
