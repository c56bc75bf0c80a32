package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// OrderRefund refunds a paid order for an operator (payments.Refund).
type OrderRefund interface {
	Order(ctx context.Context, ch *seckill.SessionChange) (*seckill.Order, bool, error)
}

// refundBody is the body of POST /admin/v1/orders/{order_no}/refund.
type refundBody struct {
	Reason *string `json:"reason"`
}

// refundOrder: POST /admin/v1/orders/{order_no}/refund, an operator's
// refund of a PAID order (a customer-service cancellation). It needs an
// Idempotency-Key: a refund moves money, and a retry after a timeout must
// find the first attempt, not start a second one. 202 {order_no, status}:
// the order is REFUND_PENDING and its units are back on sale; the refund
// relay takes the money back through the provider and the order ends
// REFUNDED. 409 for an order that is not PAID (refunded already included),
// 422 IDEMPOTENCY_MISMATCH for a key used for another change.
func (s *Server) refundOrder(c *fiber.Ctx) error {
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	if key == "" {
		return seckill.Errorf(seckill.EINVALID, "a refund needs an %s header: a retry with it is answered, never refunded twice", HeaderIdempotencyKey)
	}
	var body refundBody
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	if body.Reason == nil {
		return seckill.Errorf(seckill.EINVALID, "field \"reason\" is required")
	}
	ch := &seckill.SessionChange{Action: seckill.ActionRefund, OrderNo: c.Params("order_no"), Reason: *body.Reason,
		From: s.clientIP(c).String(), RequestID: key, TraceID: traceID(c)}
	ch.Actor, ch.ActorRole = actor(c)
	o, applied, err := s.svc.Refund.Order(c.UserContext(), ch)
	if err != nil {
		return err
	}
	// The units are back in Redis: a sold-out answer this process
	// remembers must not turn away the shoppers who could buy them now.
	s.svc.Admission.SoldOut.Clear(o.SessionID)
	s.log.Info("order refund", "trace_id", traceID(c), "order_no", o.OrderNo, "session_id", o.SessionID,
		"actor", ch.Actor, "role", ch.ActorRole, "request_id", key, "applied", applied, "status", o.Status)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": o.OrderNo, "status": o.Status, "applied": applied})
}
