package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// HeaderSignature is the webhook signature header (see seckill.SignWebhook).
const HeaderSignature = seckill.HeaderSignature

// SignWebhook is seckill.SignWebhook, for callers of the API package.
var SignWebhook = seckill.SignWebhook

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

// webhook: POST /api/v1/payments/webhook. It answers 200 only once the
// payment is durably handled: written to MySQL as RECEIVED and signalled
// into the order's workflow, or, when the workflow has finished, recorded
// in MySQL as a payment to refund. Replays answer 200 and change nothing.
func (s *Server) webhook(c *fiber.Ctx) error {
	body := c.Body()
	if err := seckill.VerifyWebhook(s.cfg.WebhookSecret, c.Get(HeaderSignature), body, s.cfg.Now()); err != nil {
		return err
	}
	var wb webhookBody
	if err := decodeStrict(body, &wb, false); err != nil {
		return err
	}
	trace := traceID(c)
	p, err := wb.payment(trace)
	if err != nil {
		return err
	}
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
	err = s.flow.Pay(ctx, p)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		// No running workflow: the order is finished (a late payment) or
		// its workflow has not started yet.
		var outcome seckill.PaymentOutcome
		outcome, _, err = s.store.ApplyPayment(ctx, p)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			return seckill.Errorf(seckill.EUNAVAILABLE, "order %s is still being created; retry the delivery", p.OrderNo)
		}
		if err == nil {
			s.log.Warn("payment for a finished order", "trace_id", trace, "order_no", p.OrderNo,
				"payment_id", p.PaymentID, "outcome", outcome)
			err = s.refreshView(ctx, p.OrderNo)
		}
	}
	if err != nil {
		return err
	}
	s.log.Info("payment received", "trace_id", trace, "order_no", p.OrderNo, "payment_id", p.PaymentID)
	return c.JSON(fiber.Map{"received": true})
}

// refreshView re-caches an order's view from its row after the API changed
// the row itself (no workflow was there to do it).
func (s *Server) refreshView(ctx context.Context, orderNo string) error {
	o, err := s.store.Order(ctx, orderNo)
	if err != nil {
		return err
	}
	return s.gate.PutOrder(ctx, o)
}
