package api

import (
	"bytes"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

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

// limitBodies gives each request its body limit before the body is read:
// Fiber's BodyLimit is the whole server's, and fasthttp reads a body
// before any handler runs, so the Stripe route's larger one is chosen
// from the request line.
func (s *Server) limitBodies(app *fiber.App) {
	app.Server().HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		return fasthttp.RequestConfig{MaxRequestBodySize: s.bodyLimitOf(h)}
	}
}

// bodyLimitOf is the body limit of the request h heads: the Stripe
// route's for its exact path (any other spelling keeps the API's limit).
func (s *Server) bodyLimitOf(h *fasthttp.RequestHeader) int {
	path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
	if s.cfg.StripeEvents != nil && string(h.Method()) == fiber.MethodPost && string(path) == stripeWebhookPath {
		return stripeBodyLimit
	}
	return bodyLimit
}
