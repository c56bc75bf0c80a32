package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// Payer makes the payment provider pay an order and returns the status the
// API answered its webhook with (sandbox.Provider does this).
type Payer interface {
	Pay(ctx context.Context, orderNo, paymentID string, amountCents int64) (int, error)
}

// devTokenTTL is the lifetime of a dev sign-in: a working day.
const devTokenTTL = 24 * time.Hour

type devTokenBody struct {
	UserID *int64 `json:"user_id"`
}

// devToken: POST /dev/v1/token {"user_id": N} (dev only) returns a shopper
// token for any user, so that the shop page can switch users without the
// CLI. Mounted only with Config.Dev: it hands out every identity.
func (s *Server) devToken(c *fiber.Ctx) error {
	var body devTokenBody
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	if body.UserID == nil || *body.UserID <= 0 {
		return seckill.Errorf(seckill.EINVALID, "field \"user_id\" must be a positive integer")
	}
	now := s.cfg.Now()
	tok, err := IssueToken(s.cfg.JWTSecret, *body.UserID, devTokenTTL, now)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"token": tok, "user_id": *body.UserID, "expires_at": now.Add(devTokenTTL).UTC()})
}

// devPay: POST /dev/v1/orders/{order_no}/pay (dev only, the owner) makes
// the payment provider pay the order's amount. The money arrives the real
// way, as the provider's signed webhook to /api/v1/payments/webhook, so the
// page exercises the production payment path. The payment id is derived
// from the order number: a second click is a replay and changes nothing.
func (s *Server) devPay(c *fiber.Ctx) error {
	ctx := c.UserContext()
	o, err := s.findOrder(ctx, c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	switch o.Status {
	case seckill.StatusWaitPay, seckill.StatusQueued:
		// A QUEUED order is payable at once: the webhook starts its
		// workflow with the payment if it has not started yet.
	default:
		return seckill.Errorf(seckill.ECONFLICT, "order %s is %s and cannot be paid", o.OrderNo, o.Status)
	}
	if s.cfg.Payer == nil {
		return seckill.Errorf(seckill.EUNAVAILABLE, "no sandbox payment provider is configured")
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, err := s.cfg.Payer.Pay(pctx, o.OrderNo, "dev_"+o.OrderNo, o.AmountCents)
	if err != nil {
		s.log.Warn("sandbox payment failed", "trace_id", traceID(c), "order_no", o.OrderNo, "error", err)
		return seckill.Errorf(seckill.EUNAVAILABLE, "the sandbox provider could not deliver the payment; retry")
	}
	if status != http.StatusOK {
		return seckill.Errorf(seckill.EUNAVAILABLE, "the payment webhook was answered %d; retry", status)
	}
	s.log.Info("sandbox payment sent", "trace_id", traceID(c), "order_no", o.OrderNo)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": o.OrderNo, "status": o.Status})
}
