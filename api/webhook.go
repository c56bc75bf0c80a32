package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/signature"
)

// HeaderSignature is the webhook signature header (see signature.Sign).
const HeaderSignature = signature.Header

// webhookBody is the provider's notification.
type webhookBody struct {
	EventID     string `json:"event_id"`
	PaymentID   string `json:"payment_id"`
	OrderNo     string `json:"order_no"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency"` // optional; given, the order's or refunded
	Status      string `json:"status"`
}

// payment is the notification's payment, once its fields hold: an absent
// field is as wrong as an empty one.
func (b *webhookBody) payment(trace string) (*seckill.Payment, error) {
	for _, f := range []struct{ name, v string }{{"event_id", b.EventID}, {"payment_id", b.PaymentID}, {"order_no", b.OrderNo}} {
		if f.v == "" || len(f.v) > 128 {
			return nil, seckill.Errorf(seckill.EINVALID, "field %q must be a string of 1 to 128 bytes", f.name)
		}
	}
	if b.AmountCents <= 0 {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"amount_cents\" must be a positive integer")
	}
	if b.Currency != "" && !seckill.ValidCurrency(b.Currency) {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"currency\" must be a lower-case ISO 4217 code such as usd, not %q", b.Currency)
	}
	if b.Status != "SUCCEEDED" {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"status\" must be \"SUCCEEDED\"")
	}
	return &seckill.Payment{EventID: b.EventID, PaymentID: b.PaymentID, OrderNo: b.OrderNo, AmountCents: b.AmountCents,
		Currency: b.Currency, TraceID: trace}, nil
}

// webhook: POST /api/v1/payments/webhook, the seckill-signed payment
// notification (the sandbox, the http provider's adapter). Once the
// signature and the body hold, the payment goes through receivePayment.
func (s *Server) webhook(c *fiber.Ctx) error {
	body := c.Body()
	if err := signature.VerifyAny(s.webhookSecrets(), c.Get(HeaderSignature), body, s.cfg.Now()); err != nil {
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

// PaymentIntake takes a payment whose provider's signature held
// (payments.Intake); nil once it is durably handled.
type PaymentIntake interface {
	Receive(ctx context.Context, p *seckill.Payment) error
}

// receivePayment hands a payment whose provider signature held to the
// intake, and answers 200 once it is durably handled.
func (s *Server) receivePayment(c *fiber.Ctx, p *seckill.Payment) error {
	if err := s.svc.Payments.Receive(c.UserContext(), p); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"received": true})
}

// webhookSecrets are the secrets a signature may be made with: the
// current one and, during a rollover, the others.
func (s *Server) webhookSecrets() [][]byte {
	return append([][]byte{s.cfg.WebhookSecret}, s.cfg.RotatedWebhookSecrets...)
}
