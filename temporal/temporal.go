// Package temporal is the client-side Temporal adapter: it starts one
// OrderWorkflow per order (workflow ID order:<order_no>, a second start is
// detected and reported, never doubled), and delivers payments and
// cancellations to running orders as signals.
package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/workflows"
)

// Dial connects to the Temporal frontend opts names (address, namespace,
// TLS, credentials: see internal/app's Temporal). metrics receives the
// SDK's own metrics (see MetricsHandler); nil drops them. The SDK checks
// the connection before it returns, so a server that refuses our
// certificate (or our lack of one) stops the process here, said plainly.
func Dial(ctx context.Context, opts client.Options, logger *slog.Logger, metrics client.MetricsHandler) (client.Client, error) {
	opts.Logger = log.NewStructuredLogger(logger)
	opts.MetricsHandler = metrics
	if opts.ConnectionOptions.GrpcCompression == nil {
		// The SDK gzips every request by default (and the server answers a
		// gzipped request gzipped): CPU spent shrinking messages of a few
		// hundred bytes, in the process that also answers the sale's
		// shoppers (BenchmarkNoopsByCompression, docs/BENCHMARKS.md).
		opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionNone{}
	}
	if err := traced(&opts); err != nil {
		return nil, err
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("temporal %s (namespace %s, %s): %w%s", opts.HostPort, opts.Namespace, transport(opts), err, dialHint(opts))
	}
	return c, nil
}

// transport says how Dial reached the server, for its error.
func transport(opts client.Options) string {
	switch tc := opts.ConnectionOptions.TLS; {
	case tc == nil || opts.ConnectionOptions.TLSDisabled:
		return "plaintext"
	case len(tc.Certificates) > 0:
		return "TLS with a client certificate"
	default:
		return "TLS without a client certificate"
	}
}

// dialHint names the likely fix for a failed dial.
func dialHint(opts client.Options) string {
	switch tc := opts.ConnectionOptions.TLS; {
	case tc == nil || opts.ConnectionOptions.TLSDisabled:
		return " (start a dev server with `make temporal`; a server with TLS needs TEMPORAL_TLS=true)"
	case len(tc.Certificates) == 0 && opts.Credentials == nil:
		return " (a server that demands mTLS needs TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH)"
	default:
		return ""
	}
}

// Orders starts and signals order workflows.
type Orders struct {
	c         client.Client
	taskQueue string
	// EagerStart asks the server to hand the first workflow task straight
	// back to a worker of this process (same client): the order skips the
	// task-queue matching, which is the slowest step of a start on a busy
	// server (docs/BENCHMARKS.md has the A/B).
	EagerStart bool
	// PreheatLead and RetainAfter are the life StartSession gives each
	// session (seckill's defaults when zero).
	PreheatLead, RetainAfter time.Duration
}

// NewOrders returns an Orders that starts workflows on taskQueue.
func NewOrders(c client.Client, taskQueue string) *Orders {
	return &Orders{c: c, taskQueue: taskQueue}
}

// Start starts the workflow of an order. started is false when the workflow
// already existed (a relay or retry raced the API): that is the detection of
// a duplicate start, not an error.
func (o *Orders) Start(ctx context.Context, req *seckill.OrderRequest) (started bool, err error) {
	return o.startOnce(purchaseContext(ctx, req), o.startOptions(req), workflows.OrderWorkflowName, *req)
}

// startOnce starts a workflow whose options refuse a second run of its ID
// (WorkflowExecutionErrorWhenAlreadyStarted): started is false when a run
// existed, which is the detection of a duplicate, not an error.
func (o *Orders) startOnce(ctx context.Context, opts client.StartWorkflowOptions, name string, arg any) (bool, error) {
	_, err := o.c.ExecuteWorkflow(ctx, opts, name, arg)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("start workflow %s: %w", opts.ID, err)
	}
	return true, nil
}

// startOptions are the options every start of an order's workflow uses,
// Start's and PayWithStart's alike: a workflow is the same whichever path
// started it.
func (o *Orders) startOptions(req *seckill.OrderRequest) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        WorkflowID(req.OrderNo),
		TaskQueue: o.taskQueue,
		// An order number is used once, ever: a finished order's workflow
		// must not be started again, and a running one is not joined.
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    workflows.SearchAttributes(req),
		StaticSummary: fmt.Sprintf("order %s · user %d · session %d · qty %d",
			req.OrderNo, req.UserID, req.SessionID, req.Quantity),
		Memo:             map[string]any{"trace_id": req.TraceID},
		EnableEagerStart: o.EagerStart,
	}
}

// PayWithStart delivers a payment to the order's workflow, starting the
// workflow with req when it has not started yet (signal-with-start): a
// payment never waits for the API's start or the relay. A running workflow
// just gets the signal, so it is safe against a start racing it; the one
// workflow per order still holds (same workflow ID). NOT_FOUND means the
// workflow has finished: it is never started again (REJECT_DUPLICATE), the
// payment is the caller's to record as a late one.
func (o *Orders) PayWithStart(ctx context.Context, req *seckill.OrderRequest, p *seckill.Payment) error {
	ctx, span := payStartContext(ctx, req)
	defer span.End()
	opts := o.startOptions(req)
	// Signal-with-start joins a running workflow by definition (the server
	// refuses the FAIL conflict policy for it), and the SDK has no eager
	// start for it: the first task goes through the task queue.
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	opts.WorkflowExecutionErrorWhenAlreadyStarted = false
	opts.EnableEagerStart = false
	_, err := o.c.SignalWithStartWorkflow(ctx, opts.ID, workflows.PaymentSignal, *p, opts, workflows.OrderWorkflowName, *req)
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return seckill.Errorf(seckill.ENOTFOUND, "the workflow of order %s has finished", req.OrderNo)
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// StartRefund starts a refund run of a payment; started is false when a run
// is going on or one completed (a refund is never made twice). A run that
// failed (the provider refused; the failure is recorded in MySQL) may be
// followed by a new one under the same id: that is the retry.
func (o *Orders) StartRefund(ctx context.Context, r *seckill.Refund) (bool, error) {
	opts := client.StartWorkflowOptions{
		ID:                                       RefundWorkflowID(r.PaymentID),
		TaskQueue:                                o.taskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		StaticSummary:                            fmt.Sprintf("refund %s · order %s", r.PaymentID, r.OrderNo),
		Memo:                                     map[string]any{"trace_id": r.TraceID},
	}
	return o.startOnce(ctx, opts, workflows.RefundWorkflowName, *r)
}

// unavailable wraps a Temporal failure in the error vocabulary: the caller
// answers 503 and its client retries.
func unavailable(err error) error {
	return fmt.Errorf("%w (temporal: %v)", seckill.Errorf(seckill.EUNAVAILABLE, "order service unavailable, retry shortly"), err)
}

// Pay signals a payment to the order's running workflow. NOT_FOUND means no
// workflow is running for it (never started, or already finished).
func (o *Orders) Pay(ctx context.Context, p *seckill.Payment) error {
	return o.signal(ctx, p.OrderNo, workflows.PaymentSignal, *p)
}

// Cancel asks the order's running workflow to close the order.
func (o *Orders) Cancel(ctx context.Context, orderNo, traceID string) error {
	return o.signal(ctx, orderNo, workflows.CancelSignal, workflows.CancelRequest{Reason: "shopper", TraceID: traceID})
}

func (o *Orders) signal(ctx context.Context, orderNo, name string, arg any) error {
	err := o.c.SignalWorkflow(ctx, WorkflowID(orderNo), "", name, arg)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return seckill.Errorf(seckill.ENOTFOUND, "no running workflow for order %s", orderNo)
	}
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// State queries the state of an order's workflow.
func (o *Orders) State(ctx context.Context, orderNo string) (*workflows.OrderState, error) {
	v, err := o.c.QueryWorkflow(ctx, WorkflowID(orderNo), "", workflows.StateQuery)
	if err != nil {
		return nil, err
	}
	var st workflows.OrderState
	if err := v.Get(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Running tells whether the workflow of an order is running. false means it
// never started, was lost (an in-memory server restarted), or ended one way
// or another (completed, failed, terminated, timed out): nothing will move
// the order any more. An error means Temporal could not say.
func (o *Orders) Running(ctx context.Context, orderNo string) (bool, error) {
	d, err := o.c.DescribeWorkflowExecution(ctx, WorkflowID(orderNo), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe workflow %s: %w", WorkflowID(orderNo), err)
	}
	return d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, nil
}

// Ping checks that the Temporal frontend answers.
func (o *Orders) Ping(ctx context.Context) error {
	_, err := o.c.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}
