package activities

import (
	"time"

	"github.com/seckill/seckill"
)

// Registered names of the activities. They are part of every recorded
// history: renaming one breaks the replay of running orders. Each is the
// name of its method, so that a workflow's method value (a.CreateOrder)
// resolves to it even where nothing is registered (the replayer);
// worker/names_test.go checks both sides, and the recorded histories.
const (
	CreateOrderName     = "CreateOrder"
	ApplyPaymentName    = "ApplyPayment"
	CloseAndReleaseName = "CloseAndRelease"

	RefundPaymentName       = "RefundPayment"
	MarkRefundedName        = "MarkRefunded"
	RecordRefundFailureName = "RecordRefundFailure"

	ReconcileAllName = "ReconcileAll"

	LoadSessionName    = "LoadSession"
	PreheatSessionName = "PreheatSession"
	RetireSessionName  = "RetireSession"
	DrawSessionName    = "DrawSession"
	PassRightsName     = "PassRights"
	RecordLostName     = "RecordLost"

	CommitDrawName         = "CommitDraw"
	PublishRegistrantsName = "PublishRegistrants"
)

// CreateOrderInput is the input of the CreateOrder activity.
type CreateOrderInput struct {
	Request     seckill.OrderRequest `json:"request"`
	PayDeadline time.Time            `json:"pay_deadline"`
}

// CreateOrderResult tells the status the order row has after CreateOrder:
// WAIT_PAY, or FAILED when the database refused it (the row's reason says
// why); another status when the order was already decided before (a retry).
type CreateOrderResult struct {
	Status seckill.Status `json:"status"`
	// At is when the step ended, by the worker's clock: the pay timer is
	// set from it (zero in histories from before it was recorded).
	At time.Time `json:"at,omitzero"`
}

// PaymentResult is the result of the ApplyPayment activity.
type PaymentResult struct {
	Outcome seckill.PaymentOutcome `json:"outcome"`
	Status  seckill.Status         `json:"status"`
}

// CloseOrderInput is the input of the CloseAndRelease activity and of the
// sweep's CloseLost.
type CloseOrderInput struct {
	Request seckill.OrderRequest `json:"request"`
	Reason  string               `json:"reason"`
	// AskedAt is when the close was decided (the pay timer fired, the
	// shopper cancelled): the payment provider is asked whether the order
	// was paid after all, and may stay unreachable for the pay grace from
	// then before the order closes anyway. Zero: close without asking (the
	// row was never created).
	AskedAt time.Time `json:"asked_at,omitzero"`
}

// CloseOrderResult tells the order's status after the close and whether
// this close gave the database stock back.
type CloseOrderResult struct {
	Status   seckill.Status `json:"status"`
	GaveBack bool           `json:"gave_back"`
	// PaymentID is the payment the provider said had paid the order when
	// asked before the close: the order is PAID with it instead.
	PaymentID string `json:"payment_id,omitempty"`
}

// CloseAndReleaseResult is the result of the CloseAndRelease activity:
// the close's result and the units given back in Redis (0 when the order
// was not closed, or was released before).
type CloseAndReleaseResult struct {
	Status    seckill.Status `json:"status"`
	GaveBack  bool           `json:"gave_back"`
	Released  int            `json:"released"`
	PaymentID string         `json:"payment_id,omitempty"`
}

// RefundFailure is the input of RecordRefundFailure: a refund run whose
// provider call failed.
type RefundFailure struct {
	Refund seckill.Refund `json:"refund"`
	Error  string         `json:"error"`
}
