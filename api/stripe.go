package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// HeaderStripeSignature carries Stripe's signature of an event.
const HeaderStripeSignature = "Stripe-Signature"

// StripeEvents verifies Stripe's signed events and returns the payment one
// reports (package paymentstripe): nil for an event that pays nothing,
// UNAUTHENTICATED for a missing, bad or stale signature, INVALID_ARGUMENT
// for an event that cannot be applied. Declared here so that the API
// knows no provider: the composition root hands it in.
type StripeEvents interface {
	Payment(payload []byte, signature string) (*seckill.Payment, error)
}

// stripeWebhook: POST /api/v1/payments/stripe/webhook, Stripe's events.
// payment_intent.succeeded becomes the payment the seckill webhook would
// report and goes through the same intake (receivePayment); any other
// event is acknowledged and changes nothing, so Stripe stops resending it.
func (s *Server) stripeWebhook(c *fiber.Ctx) error {
	p, err := s.cfg.StripeEvents.Payment(c.Body(), c.Get(HeaderStripeSignature))
	if err != nil {
		return err
	}
	if p == nil {
		return c.JSON(fiber.Map{"received": true})
	}
	p.TraceID = traceID(c)
	return s.receivePayment(c, p)
}
