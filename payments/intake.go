package payments

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/tracing"
)

// Ledger is the MySQL side of the intake: the payments and the order rows.
type Ledger interface {
	// RecordPayment writes the payment as RECEIVED; idempotent. settled:
	// the payment (or its event) was settled already, a replay.
	RecordPayment(ctx context.Context, p *seckill.Payment) (settled bool, err error)
	// ApplyPayment settles a payment no workflow will take: PAID, or a
	// refund to come; it returns the order as it left it.
	ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, *seckill.Order, error)
	// Order is the order's row; NOT_FOUND before it is created.
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// OrderFinder finds an order as its shopper sees it (orders.Finder): the
// cached view, a QUEUED view made from its reservation (with the
// session's SKU, amount and deadline), or its row; owner 0 is any owner.
type OrderFinder interface {
	Find(ctx context.Context, orderNo string, owner int64) (*seckill.Order, error)
}

// Reservations are the Redis side of a QUEUED order: its reservation (the
// workflow's input), its pending-start entry, and the cached view of any
// order.
type Reservations interface {
	Reservation(ctx context.Context, orderNo string) (*seckill.Reservation, error)
	Started(ctx context.Context, sessionID int64, orderNo string) error
	PutOrder(ctx context.Context, o *seckill.Order) error
}

// Workflows deliver a payment to the order's workflow; NOT_FOUND when no
// workflow runs for the order any more.
type Workflows interface {
	Pay(ctx context.Context, p *seckill.Payment) error
	// PayWithStart starts the workflow with req if it has not started.
	PayWithStart(ctx context.Context, req *seckill.OrderRequest, p *seckill.Payment) error
}

// SessionCache gives the session of a QUEUED order (its SKU and price).
type SessionCache interface {
	Get(ctx context.Context, id int64) (*seckill.Session, error)
}

// Intake is the payment intake every provider's webhook ends in, once the
// provider's signature is checked. A payment is durably handled when
// Receive returns nil: written to MySQL as RECEIVED and signalled into the
// order's workflow (started by this very signal when the order is still
// QUEUED: see deliver), or, when the workflow has finished, recorded in
// MySQL as a payment to refund. A payment whose amount is not the order's
// is handled the same way (the money was captured: it is refunded, never
// applied), then refused with AMOUNT_MISMATCH. Replays (the same event or
// payment id) return nil and change nothing.
type Intake struct {
	Ledger       Ledger
	Orders       OrderFinder
	Reservations Reservations
	Workflows    Workflows
	Sessions     SessionCache
	// PayTimeout is each order's (the workflow's input).
	PayTimeout time.Duration
	Log        *slog.Logger
}

// Receive takes one payment in. UNAVAILABLE asks the provider to deliver
// it again (the order is still being created, or a store did not answer).
func (in *Intake) Receive(ctx context.Context, p *seckill.Payment) error {
	o, err := in.Orders.Find(ctx, p.OrderNo, 0)
	if err != nil {
		return err
	}
	// The webhook's trace is the provider's call, not the purchase's: it
	// links to the purchase's trace (the order's trace id).
	if l, ok := tracing.LinkTo(o.TraceID); ok {
		trace.SpanFromContext(ctx).AddLink(l)
	}
	// Written before the signal: the signal lives only in the workflow's
	// history, and a workflow that cannot record the payment (MySQL down
	// past its retries, or the run terminated or lost) would take it along.
	// This row outlives it; the refund relay settles it once no workflow
	// runs for the order. Written first, it also tells a replay.
	if settled, err := in.Ledger.RecordPayment(ctx, p); err != nil || settled {
		return err
	}
	err = in.deliver(ctx, o, p)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		// No running workflow: the order is finished (a late payment).
		var outcome seckill.PaymentOutcome
		var settled *seckill.Order
		outcome, settled, err = in.Ledger.ApplyPayment(ctx, p)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			return seckill.Errorf(seckill.EUNAVAILABLE, "order %s is still being created; retry the delivery", p.OrderNo)
		}
		if err == nil {
			in.Log.Warn("payment for a finished order", "trace_id", p.TraceID, "order_no", p.OrderNo,
				"payment_id", p.PaymentID, "outcome", outcome)
			// No workflow was there to republish the view.
			err = in.Reservations.PutOrder(ctx, settled)
		}
	}
	if err != nil {
		return err
	}
	if !p.Pays(o.AmountCents, o.Currency) {
		// Refused, yet the money was captured: the workflow (or the late
		// path above) recorded it to be refunded; it never pays the order.
		in.Log.Warn("payment of the wrong amount: refund pending", "trace_id", p.TraceID, "order_no", p.OrderNo,
			"payment_id", p.PaymentID, "amount_cents", p.AmountCents, "currency", p.Currency,
			"order_amount_cents", o.AmountCents, "order_currency", o.Currency)
		return seckill.Errorf(seckill.EAMOUNT, "%s does not match the order's %s; the payment will be refunded",
			amount(p.AmountCents, p.Currency), amount(o.AmountCents, o.Currency))
	}
	in.Log.Info("payment received", "trace_id", p.TraceID, "order_no", p.OrderNo, "payment_id", p.PaymentID)
	return nil
}

// deliver hands a payment to the order's workflow.
//
// A QUEUED order (reserved in Redis, no row yet) is paid with
// signal-with-start, built from its reservation exactly as the API's start
// and the relay build it: its workflow may not have started yet (the API's
// start still running or lost, the relay not there yet), and a payment
// never waits for it. If it has started, the same call only signals it, so
// racing the API's start or the relay still makes one workflow with one
// payment; the workflow applies the payment as soon as it has created the
// row. The pending-start entry is cleared afterwards: the workflow exists.
//
// An order with a row has, or had, its workflow: it only gets a signal,
// never a start. Temporal forgets a finished workflow after its retention,
// and a start then would be a second workflow for the order. A QUEUED view
// is not proof enough (it is made from the reservation when the cached
// view is missing, and PAID and FAILED orders keep their reservation), so
// MySQL, the guard that outlives the retention, is asked first: one
// indexed read per payment of a QUEUED order.
//
// NOT_FOUND: no workflow runs for the order any more.
func (in *Intake) deliver(ctx context.Context, o *seckill.Order, p *seckill.Payment) error {
	if o.Status != seckill.StatusQueued {
		return in.Workflows.Pay(ctx, p)
	}
	if _, err := in.Ledger.Order(ctx, o.OrderNo); err == nil {
		return in.Workflows.Pay(ctx, p)
	} else if seckill.ErrorCode(err) != seckill.ENOTFOUND {
		return err
	}
	req, err := in.orderRequest(ctx, o.OrderNo)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		// Released since the order was read: the order was created and
		// closed meanwhile, and has a row now.
		return in.Workflows.Pay(ctx, p)
	} else if err != nil {
		return err
	}
	if err := in.Workflows.PayWithStart(ctx, req, p); err != nil {
		return err
	}
	if err := in.Reservations.Started(ctx, req.SessionID, req.OrderNo); err != nil {
		// The relay will find the workflow started and clear it.
		in.Log.Warn("could not clear the pending-start entry", "order_no", req.OrderNo, "error", err)
	}
	return nil
}

// orderRequest is the workflow input of a QUEUED order: its reservation,
// the session's SKU and price, the configured pay timeout.
func (in *Intake) orderRequest(ctx context.Context, orderNo string) (*seckill.OrderRequest, error) {
	r, err := in.Reservations.Reservation(ctx, orderNo)
	if err != nil {
		return nil, err
	}
	sess, err := in.Sessions.Get(ctx, r.SessionID)
	if err != nil {
		return nil, err
	}
	return seckill.NewOrderRequest(*r, sess, in.PayTimeout), nil
}

// amount names an amount as the webhook gave it, its currency when known.
func amount(cents int64, currency string) string {
	if currency == "" {
		return fmt.Sprintf("amount_cents %d", cents)
	}
	return fmt.Sprintf("amount_cents %d %s", cents, currency)
}
