package api

import (
	"context"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/seckill/seckill"
)

// Checkout opens the provider's payment of an order (payments.Checkout).
type Checkout interface {
	Open(ctx context.Context, o *seckill.Order) (*seckill.Checkout, error)
}

// createPayment: POST /api/v1/orders/{order_no}/payment (the owner) opens
// the provider's payment of a QUEUED or WAIT_PAY order and answers where
// to pay: 201 with the same payment on every call, 409 once the order can
// no longer be paid, 404 for anyone else's order.
func (s *Server) createPayment(c *fiber.Ctx) error {
	ctx := c.UserContext()
	o, err := s.svc.Orders.Find(ctx, c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	co, err := s.svc.Checkout.Open(ctx, o)
	if err != nil {
		if seckill.ErrorCode(err) == seckill.EUNAVAILABLE {
			s.log.Warn("checkout not opened", "trace_id", traceID(c), "order_no", o.OrderNo, "error", err)
		}
		return err
	}
	s.log.Info("checkout opened", "trace_id", traceID(c), "order_no", o.OrderNo, "payment_id", co.PaymentID)
	return c.Status(fiber.StatusCreated).JSON(co)
}

// mountCheckoutPages serves the sandbox provider's hosted checkout pages,
// when it is the provider, under their path (sandbox.CheckoutPath).
func (s *Server) mountCheckoutPages(app *fiber.App) {
	if s.cfg.CheckoutPages == nil {
		return
	}
	h := adaptor.HTTPHandler(s.cfg.CheckoutPages)
	app.Get("/dev/checkout/:payment_id", h)
	app.Post("/dev/checkout/:payment_id", h)
}
