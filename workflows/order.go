package workflows

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

// steps names the order's activities by method value: nil, since only the
// worker's registered instance ever runs (the SDK resolves a method value
// to its registered name and uses the registered function).
var steps *activities.Activities

// createOptions run CreateOrder. Business refusals come back as results
// or non-retryable errors; infrastructure failures (MySQL or Redis down)
// retry with a capped backoff for up to an hour, after which the order
// closes (create).
var createOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    10 * time.Second,
	ScheduleToCloseTimeout: time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    200 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumInterval:    10 * time.Second,
	},
}

// compensationOptions are for the steps that must outlast any outage an
// operator can fix, so they retry for a day: giving stock back, recording
// a payment, and the refund's records (refund.go).
var compensationOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    10 * time.Second,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    200 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumInterval:    30 * time.Second,
	},
}

// settleOptions run the steps that settle an order once its row exists,
// ApplyPayment and CloseAndRelease, as local activities with
// compensationOptions' timeouts and retries. Past the SDK's local retry
// threshold the retries wait on workflow timers, so a long MySQL outage
// costs timers, not a workflow task held open.
//
// The webhook already answered 200 for a signalled payment, so it must
// never be dropped: if it still cannot be recorded after a day the
// workflow fails loudly (Failed in the Web UI, the payment in its history)
// rather than closing the order over it. The payment itself is safe: the
// webhook wrote it to MySQL (RECEIVED) before signalling, and the refund
// relay settles it once this workflow has ended.
var settleOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout:    compensationOptions.StartToCloseTimeout,
	ScheduleToCloseTimeout: compensationOptions.ScheduleToCloseTimeout,
	RetryPolicy:            compensationOptions.RetryPolicy,
}

// order is the running state of one OrderWorkflow.
type order struct {
	req   seckill.OrderRequest
	state OrderState
	// log carries the order number and the purchase's trace id on every
	// line, so one grep of the trace id follows a purchase from the API's
	// request log through the workflow to PAID or CLOSED. It is replay-aware:
	// a replayed history logs nothing twice.
	log log.Logger
	// err is a payment that could not be recorded: the workflow fails with it.
	err error
	// listed is the OrderStatus search attribute: what the Web UI lists the
	// order as. Upserting it is a billable action, so it is only upserted
	// when it changes.
	listed seckill.Status
	// lag is how far the workflow's clock was behind the worker's when the
	// row was created, added to it to set the pay timer. The clock of an
	// eagerly started workflow is when its start reached the server, and
	// under a sale's load the start's answer, which carries the first
	// task, comes back long after: set from that clock, every pay timer of
	// a burst fired that much after its deadline.
	lag time.Duration
}

// OrderWorkflow is the saga of one order, started by the API (or the relay)
// with ID order:<order_no> once the shopper won a Redis reservation:
//
//  1. create the order row in WAIT_PAY and decrement MySQL stock (one tx);
//  2. wait for the payment signal, the cancel signal or the pay timer;
//  3. paid → PAID; timeout, cancel or workflow cancellation → compensate:
//     CLOSED with MySQL stock given back (one tx), then the Redis
//     reservation released, each exactly once.
//
// Payments that arrive when the order cannot take them (closed, already
// paid) are recorded for refund, never applied.
func OrderWorkflow(ctx workflow.Context, req seckill.OrderRequest) (OrderState, error) {
	if req.PayTimeout <= 0 {
		req.PayTimeout = seckill.DefaultPayTimeout
	}
	o := &order{req: req, state: OrderState{OrderNo: req.OrderNo, Status: seckill.StatusQueued},
		log: log.With(workflow.GetLogger(ctx), "order_no", req.OrderNo, "trace_id", req.TraceID,
			"session_id", req.SessionID, "user_id", req.UserID)}
	if err := workflow.SetQueryHandler(ctx, StateQuery, func() (OrderState, error) { return o.state, nil }); err != nil {
		return o.state, err
	}
	payments := workflow.GetSignalChannel(ctx, PaymentSignal)
	cancels := workflow.GetSignalChannel(ctx, CancelSignal)
	// Once the row may exist, every step runs on a disconnected context: a
	// workflow cancellation must not interrupt a decision half-way, and
	// compensation must run even when the workflow itself was cancelled.
	steady, _ := workflow.NewDisconnectedContext(ctx)
	steady = workflow.WithLocalActivityOptions(steady, settleOptions)

	// The order is listed as it was started (WAIT_PAY, see
	// SearchAttributes), which costs no upsert; a start without the
	// attribute gets it at the first status change.
	o.listed = seckill.StatusQueued
	if s, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(OrderStatusKey); ok {
		o.listed = seckill.Status(s)
	}

	o.state.PayDeadline = req.PayBy
	if o.state.PayDeadline.IsZero() {
		// A request built without a reservation time (by hand: tests, ops;
		// seckill.NewOrderRequest always sets PayBy) counts from the
		// workflow's start.
		o.state.PayDeadline = workflow.Now(ctx).Add(req.PayTimeout)
	}
	var created activities.CreateOrderResult
	err := o.create(ctx, activities.CreateOrderInput{Request: req, PayDeadline: o.state.PayDeadline}, &created)
	if err != nil {
		// Cancelled, or MySQL stayed down past the retry budget: close the
		// order (a tombstone if the row never came) and give the stock back.
		reason := ReasonCreateFailed
		if temporal.IsCanceledError(err) {
			reason = ReasonWorkflowStopped
		}
		o.log.Warn("create order failed; compensating", "error", err)
		return o.finish(ctx, steady, reason)
	}
	// A worker's clock behind the workflow's never delays the close; one
	// ahead by more than the task could have taken (it would have timed
	// out) is a wrong clock, not a late answer, and must not close early.
	if lag := created.At.Sub(workflow.Now(ctx)); lag > 0 && lag < workflow.GetInfo(ctx).WorkflowTaskTimeout {
		o.lag = lag
	}
	o.setStatus(ctx, created.Status)
	o.applyBuffered(ctx, steady, payments)

	closeReason := ""
	if created.Status == seckill.StatusWaitPay {
		if o.state.Status == seckill.StatusWaitPay && o.err == nil {
			closeReason = o.awaitPayment(ctx, steady, payments, cancels)
		}
	} else if !created.Status.HoldsStock() && created.Status != seckill.StatusFailed {
		// Closed before (a workflow reset replays the creation): make sure
		// the Redis side is given back too.
		closeReason = ReasonWorkflowStopped
	}
	return o.finish(ctx, steady, closeReason)
}

// applyBuffered applies, right after CreateOrder, every payment signal
// that is already buffered: the webhook's signal-with-start delivers the
// payment with the start (the order was still QUEUED), and a payment may
// also come in while CreateOrder retries. Whatever the row says — WAIT_PAY
// (captured: PAID), FAILED or closed before (recorded for refund) — the
// payment is recorded as soon as the row exists, and before the pay timer
// is set, so a timer that has nothing left to wait (creating took longer
// than the pay timeout) can never close an order whose payment was
// already here.
func (o *order) applyBuffered(ctx, steady workflow.Context, payments workflow.ReceiveChannel) {
	var p seckill.Payment
	for o.err == nil && payments.ReceiveAsync(&p) {
		o.applyPayment(ctx, steady, p)
	}
}

// quickCreate is how long CreateOrder may take (retries included) before
// the order is listed QUEUED in the Web UI, the ops view of orders stuck
// before creation. A blip shorter than that costs no action.
const quickCreate = 10 * time.Second

// create runs the CreateOrder step as a local activity: it runs inside the
// workflow task that started the workflow, so an order reaches WAIT_PAY in
// one workflow task instead of two plus an activity task. Temporal, not
// MySQL, is the narrow part of the pipe (docs/BENCHMARKS.md).
//
// The order is listed WAIT_PAY from its start: if CreateOrder has not
// succeeded within quickCreate (MySQL down or slow) the order is listed
// QUEUED while it keeps trying for the rest of its budget, so that the
// "stuck before creation" filter still finds it.
func (o *order) create(ctx workflow.Context, in activities.CreateOrderInput, created *activities.CreateOrderResult) error {
	err := createOrder(ctx, in, quickCreate).Get(ctx, created)
	var appErr *temporal.ApplicationError
	if err == nil || temporal.IsCanceledError(err) || (errors.As(err, &appErr) && appErr.NonRetryable()) {
		return err
	}
	o.log.Warn("creating the order takes long; listing it QUEUED", "error", err)
	o.list(ctx, seckill.StatusQueued)
	return createOrder(ctx, in, createOptions.ScheduleToCloseTimeout-quickCreate).Get(ctx, created)
}

// createOrder runs CreateOrder with budget for its attempts.
func createOrder(ctx workflow.Context, in activities.CreateOrderInput, budget time.Duration) workflow.Future {
	opts := createOptions
	opts.ScheduleToCloseTimeout = budget
	return workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, opts), steps.CreateOrder, in)
}

// awaitPayment waits in WAIT_PAY until the order is paid (returns "") or
// must close (returns the reason).
func (o *order) awaitPayment(ctx, steady workflow.Context, payments, cancels workflow.ReceiveChannel) string {
	timerCtx, stopTimer := workflow.WithCancel(ctx)
	defer stopTimer()
	// The deadline was fixed before the row was created (and stored with
	// it); if creating took long, what is left may be nothing at all.
	timer := workflow.NewTimer(timerCtx, max(0, o.state.PayDeadline.Sub(workflow.Now(ctx).Add(o.lag))))
	reason := ""
	for o.state.Status == seckill.StatusWaitPay && reason == "" && o.err == nil {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(payments, func(c workflow.ReceiveChannel, _ bool) {
			var p seckill.Payment
			c.Receive(ctx, &p)
			o.applyPayment(ctx, steady, p)
		})
		sel.AddReceive(cancels, func(c workflow.ReceiveChannel, _ bool) {
			var r CancelRequest
			c.Receive(ctx, &r)
			// The cancel's own trace id beside the purchase's: one grep
			// of either finds who closed the order and why.
			o.log.Info("cancel received", "by", r.Reason, "cancel_trace_id", r.TraceID)
			reason = ReasonCancelled
		})
		sel.AddFuture(timer, func(f workflow.Future) {
			if err := f.Get(ctx, nil); err != nil {
				reason = ReasonWorkflowStopped // the timer was cancelled with the workflow
			} else {
				reason = ReasonTimeout
			}
		})
		sel.Select(ctx)
	}
	return reason
}

// finish compensates when closeReason is set, then applies every payment
// signal still buffered (each becomes a refund when the order can no longer
// take it) so that no accepted webhook is dropped when the workflow ends.
// It drains on every way out, failures included: a compensation that gave
// up, or a payment that could not be recorded, still leaves the other
// payments recorded before the workflow fails.
func (o *order) finish(ctx, steady workflow.Context, closeReason string) (OrderState, error) {
	if o.err != nil {
		o.drain(ctx, steady)
		return o.state, o.err
	}
	if closeReason != "" {
		if err := o.compensate(steady, closeReason); err != nil {
			o.log.Error("compensation gave up; recording buffered payments before failing", "reason", closeReason, "error", err)
			o.drain(ctx, steady)
			return o.state, err
		}
	}
	o.drain(ctx, steady)
	return o.state, o.err
}

// drain applies every buffered payment signal and discards buffered
// cancels (the order is decided). A payment that still cannot be recorded
// is not lost: the webhook wrote it to MySQL (RECEIVED) before signalling,
// and the refund relay settles it once this workflow has ended.
func (o *order) drain(ctx, steady workflow.Context) {
	payments := workflow.GetSignalChannel(ctx, PaymentSignal)
	cancels := workflow.GetSignalChannel(ctx, CancelSignal)
	var p seckill.Payment
	for payments.ReceiveAsync(&p) {
		o.applyPayment(ctx, steady, p)
	}
	var r CancelRequest
	for cancels.ReceiveAsync(&r) {
	}
}

// compensate closes the order and gives its stock back, in one
// CloseAndRelease local activity on the disconnected context steady: the
// MySQL close (compare-and-set, stock back, one tx) and then the Redis
// release, retried as a whole. Both halves are idempotent on the order
// number, so a retry after either half gives back nothing twice, and the
// release never runs unless the close left the order CLOSED. They are one
// activity, not two, because each activity is a billable action.
func (o *order) compensate(steady workflow.Context, reason string) error {
	var res activities.CloseAndReleaseResult
	if err := workflow.ExecuteLocalActivity(steady, steps.CloseAndRelease, o.closeInput(steady, reason)).Get(steady, &res); err != nil {
		return err
	}
	o.paidAtClose(res.PaymentID)
	if res.Status.HoldsStock() || res.Status == seckill.StatusFailed {
		// Lost the race to a payment (PAID), or never held stock (FAILED):
		// nothing to give back.
		o.setStatus(steady, res.Status)
		o.log.Info("close skipped: nothing to give back", "reason", reason, "status", res.Status)
		return nil
	}
	o.state.CloseReason = reason
	o.setStatus(steady, res.Status)
	o.log.Info("stock given back", "reason", reason, "mysql", res.GaveBack, "redis_units", res.Released)
	return nil
}

// closeInput is the close's input. Unless the row was never created, the
// close first asks the payment provider whether the order was paid after
// all (a lost or late webhook), from now on: the provider's grace counts
// from the moment the close was decided.
func (o *order) closeInput(ctx workflow.Context, reason string) activities.CloseOrderInput {
	in := activities.CloseOrderInput{Request: o.req, Reason: reason}
	if reason != ReasonCreateFailed {
		in.AskedAt = workflow.Now(ctx)
	}
	return in
}

// paidAtClose records the payment the provider named when asked before
// the close: the order is PAID with it instead of closed.
func (o *order) paidAtClose(paymentID string) {
	if paymentID != "" && o.state.PaymentID == "" {
		o.state.PaymentID = paymentID
		o.log.Info("paid at the provider before the close", "payment_id", paymentID)
	}
}

// applyPayment records one payment signal: it pays the order, or is
// recorded for its refund (a payment the order cannot take, or of the
// wrong amount). A refused payment (an unknown order) is logged and
// dropped: the webhook checked it before signalling, so only a forged or
// stale signal is refused here. A payment that cannot be recorded at all
// sets o.err.
func (o *order) applyPayment(ctx, steady workflow.Context, p seckill.Payment) {
	// The webhook is a request of its own with its own trace id: log both,
	// so either id finds the other.
	o.log.Info("payment received", "payment_id", p.PaymentID, "payment_trace_id", p.TraceID)
	var res activities.PaymentResult
	err := workflow.ExecuteLocalActivity(steady, steps.ApplyPayment, p).Get(steady, &res)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.NonRetryable() {
		o.log.Warn("payment refused", "payment_id", p.PaymentID, "error", err)
		return
	} else if err != nil {
		o.log.Error("payment could not be recorded", "payment_id", p.PaymentID, "error", err)
		if o.err == nil {
			o.err = err
		}
		return
	}
	switch {
	case res.Outcome == seckill.PaymentCaptured,
		// A retried capture whose first attempt committed: this payment is
		// the one that paid the order.
		res.Outcome == seckill.PaymentDuplicate && res.Status == seckill.StatusPaid && o.state.PaymentID == "":
		o.state.PaymentID = p.PaymentID
	case res.Outcome == seckill.PaymentRefundPending,
		// A retried late payment whose first attempt committed.
		res.Outcome == seckill.PaymentDuplicate && res.Status != seckill.StatusPaid:
		if !slices.Contains(o.state.LatePayments, p.PaymentID) {
			o.state.LatePayments = append(o.state.LatePayments, p.PaymentID)
			o.describe(ctx)
			o.log.Warn("payment the order cannot take: refund pending", "payment_id", p.PaymentID, "status", res.Status)
		}
	}
	o.setStatus(steady, res.Status)
}

// setStatus records a status and mirrors it into the OrderStatus search
// attribute, so that ops can list orders by status in the Web UI.
func (o *order) setStatus(ctx workflow.Context, s seckill.Status) {
	if s == "" || s == o.state.Status {
		return
	}
	o.log.Info("order status", "from", o.state.Status, "to", s)
	o.state.Status = s
	o.list(ctx, s)
	o.describe(ctx)
}

// list sets the OrderStatus search attribute unless it already says s.
func (o *order) list(ctx workflow.Context, s seckill.Status) {
	if s == o.listed {
		return
	}
	o.listed = s
	if err := workflow.UpsertTypedSearchAttributes(ctx, OrderStatusKey.ValueSet(string(s))); err != nil {
		o.log.Warn("upsert OrderStatus", "error", err)
	}
}

// describe sets the workflow's current details, which the Web UI shows at
// the top of the order's page (Temporal markdown): where the order stands
// and what it waits for, so ops read it without opening the history. It is
// query-side state, not history: changing the text needs no versioning.
func (o *order) describe(ctx workflow.Context) {
	st := o.state
	d := fmt.Sprintf("**%s** · order `%s` · user %d · session %d · %d unit(s) · trace `%s`",
		st.Status, st.OrderNo, o.req.UserID, o.req.SessionID, o.req.Quantity, o.req.TraceID)
	switch st.Status {
	case seckill.StatusWaitPay:
		d += " · waiting for payment until " + st.PayDeadline.UTC().Format(time.RFC3339)
	case seckill.StatusPaid:
		d += " · paid with `" + st.PaymentID + "`"
	case seckill.StatusClosed:
		if st.CloseReason != "" {
			d += " · closed: " + st.CloseReason + ", stock given back"
		}
	}
	if n := len(st.LatePayments); n > 0 {
		d += fmt.Sprintf(" · %d late payment(s) sent to refund", n)
	}
	workflow.SetCurrentDetails(ctx, d)
}
