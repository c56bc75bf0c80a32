package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// HeaderSignature is the webhook signature header (see seckill.SignWebhook).
const HeaderSignature = seckill.HeaderSignature

// webhookBody is the provider's notification.
type webhookBody struct {
	EventID     *string `json:"event_id"`
	PaymentID   *string `json:"payment_id"`
	OrderNo     *string `json:"order_no"`
	AmountCents *int64  `json:"amount_cents"`
	Status      *string `json:"status"`
}

func (b *webhookBody) payment(trace string) (*seckill.Payment, error) {
	for _, f := range []struct {
		name string
		v    *string
	}{{"event_id", b.EventID}, {"payment_id", b.PaymentID}, {"order_no", b.OrderNo}} {
		if f.v == nil || *f.v == "" || len(*f.v) > 128 {
			return nil, seckill.Errorf(seckill.EINVALID, "field %q must be a string of 1 to 128 bytes", f.name)
		}
	}
	if b.AmountCents == nil || *b.AmountCents <= 0 {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"amount_cents\" must be a positive integer")
	}
	if b.Status == nil || *b.Status != "SUCCEEDED" {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"status\" must be \"SUCCEEDED\"")
	}
	return &seckill.Payment{EventID: *b.EventID, PaymentID: *b.PaymentID, OrderNo: *b.OrderNo,
		AmountCents: *b.AmountCents, TraceID: trace}, nil
}

// webhook: POST /api/v1/payments/webhook, the seckill-signed payment
// notification (the sandbox, the http provider's adapter). Once the
// signature and the body hold, the payment goes through receivePayment.
func (s *Server) webhook(c *fiber.Ctx) error {
	body := c.Body()
	if err := seckill.VerifyWebhook(s.cfg.WebhookSecret, c.Get(HeaderSignature), body, s.cfg.Now()); err != nil {
		return err
	}
	var wb webhookBody
	if err := decodeStrict(body, &wb, false); err != nil {
		return err
	}
	p, err := wb.payment(traceID(c))
	if err != nil {
		return err
	}
	return s.receivePayment(c, p)
}

// receivePayment is the payment intake every provider's webhook ends in,
// once the provider's signature is checked. It answers 200 only once the
// payment is durably handled: written to MySQL as RECEIVED and signalled
// into the order's workflow (started by this very signal when the order is
// still QUEUED: see deliver), or, when the workflow has finished, recorded
// in MySQL as a payment to refund. Replays (the same event or payment id)
// answer 200 and change nothing.
func (s *Server) receivePayment(c *fiber.Ctx, p *seckill.Payment) error {
	trace := p.TraceID
	ctx := c.UserContext()
	if seen, err := s.store.PaymentSeen(ctx, p.PaymentID, p.EventID); err != nil {
		return err
	} else if seen {
		return c.JSON(fiber.Map{"received": true})
	}
	o, err := s.findOrder(ctx, p.OrderNo, 0)
	if err != nil {
		return err
	}
	if o.AmountCents != p.AmountCents {
		return seckill.Errorf(seckill.EAMOUNT, "amount_cents %d does not match the order's %d", p.AmountCents, o.AmountCents)
	}
	// Written before the signal: the signal lives only in the workflow's
	// history, and a workflow that cannot record the payment (MySQL down
	// past its retries, or the run terminated or lost) would take it along.
	// This row outlives it; the refund relay settles it once no workflow
	// runs for the order.
	if err := s.store.RecordPayment(ctx, p); err != nil {
		return err
	}
	err = s.deliver(ctx, o, p)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		// No running workflow: the order is finished (a late payment).
		var outcome seckill.PaymentOutcome
		outcome, _, err = s.store.ApplyPayment(ctx, p)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			return seckill.Errorf(seckill.EUNAVAILABLE, "order %s is still being created; retry the delivery", p.OrderNo)
		}
		if err == nil {
			s.log.Warn("payment for a finished order", "trace_id", trace, "order_no", p.OrderNo,
				"payment_id", p.PaymentID, "outcome", outcome)
			// No workflow was there to republish the view.
			err = seckill.PublishOrderView(ctx, s.store, s.gate, p.OrderNo)
		}
	}
	if err != nil {
		return err
	}
	s.log.Info("payment received", "trace_id", trace, "order_no", p.OrderNo, "payment_id", p.PaymentID)
	return c.JSON(fiber.Map{"received": true})
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
func (s *Server) deliver(ctx context.Context, o *seckill.Order, p *seckill.Payment) error {
	if o.Status != seckill.StatusQueued {
		return s.flow.Pay(ctx, p)
	}
	if _, err := s.store.Order(ctx, o.OrderNo); err == nil {
		return s.flow.Pay(ctx, p)
	} else if seckill.ErrorCode(err) != seckill.ENOTFOUND {
		return err
	}
	req, err := s.orderRequest(ctx, o.OrderNo)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		// Released since the order was read: the order was created and
		// closed meanwhile, and has a row now.
		return s.flow.Pay(ctx, p)
	} else if err != nil {
		return err
	}
	if err := s.flow.PayWithStart(ctx, req, p); err != nil {
		return err
	}
	if err := s.gate.Started(ctx, req.SessionID, req.OrderNo); err != nil {
		// The relay will find the workflow started and clear it.
		s.log.Warn("could not clear the pending-start entry", "order_no", req.OrderNo, "error", err)
	}
	return nil
}

// orderRequest is the workflow input of a QUEUED order: its reservation,
// the session's SKU and price, the configured pay timeout.
func (s *Server) orderRequest(ctx context.Context, orderNo string) (*seckill.OrderRequest, error) {
	r, err := s.gate.Reservation(ctx, orderNo)
	if err != nil {
		return nil, err
	}
	sess, err := s.sessions.get(ctx, r.SessionID)
	if err != nil {
		return nil, err
	}
	return seckill.NewOrderRequest(*r, sess, s.cfg.PayTimeout), nil
}
