package api

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/ratelimit"
)

// OrderFinder finds an order as its owner sees it (orders.Finder): the
// view polls read, MySQL only on a miss; NOT_FOUND for anyone else's.
type OrderFinder interface {
	Find(ctx context.Context, orderNo string, owner int64) (*seckill.Order, error)
}

// StartLine is a sale's line of orders waiting to be created (orders.Line):
// how many wait, and when a QUEUED order's poll should look again.
type StartLine interface {
	Wait(ctx context.Context, sessionID int64) (queued int, after time.Duration, err error)
}

// OrderCancels ask an order's workflow to close it (the shopper's
// cancel); NOT_FOUND while no workflow runs for it.
type OrderCancels interface {
	Cancel(ctx context.Context, orderNo, traceID string) error
}

type orderBody struct {
	SKUID    *int64 `json:"sku_id"`
	Quantity *int   `json:"quantity"`
}

// HeaderIdempotencyKey names the optional key of an order request
// (Stripe's convention): the same key from the same shopper for the same
// session always gets the same answer and order number.
const HeaderIdempotencyKey = "Idempotency-Key"

// idempotencyKey returns the request's Idempotency-Key ("" when none),
// copied out of the request buffer: it is pinned in Redis by a batch that
// may run after the handler stopped waiting.
func idempotencyKey(c *fiber.Ctx) (string, error) {
	k := c.Get(HeaderIdempotencyKey)
	if k == "" {
		return "", nil
	}
	if err := seckill.CheckIdempotencyKey(HeaderIdempotencyKey, k); err != nil {
		return "", err
	}
	return strings.Clone(k), nil
}

// createOrder: POST /api/v1/sessions/{id}/orders. The global bucket, the
// sold-out memory and the JWT ran first (middleware); this decodes the
// attempt, asks admission (admission.Service.Buy, the whole decision,
// cheapest check first) and encodes its answer, naming the layer that
// decided: a refusal, or 202 with the order number holding the units
// (admission has handed the order to the starter).
func (s *Server) createOrder(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	var body orderBody
	if err := decodeStrict(c.Body(), &body, true); err != nil {
		return err
	}
	qty := 1
	if body.Quantity != nil {
		qty = *body.Quantity
	}
	var sku int64
	if body.SKUID != nil {
		if sku = *body.SKUID; sku <= 0 {
			return seckill.Errorf(seckill.EINVALID, "field \"sku_id\" must be a positive integer")
		}
	}
	ans := s.svc.Admission.Buy(c.UserContext(), s.caller(c, &admission.Request{SessionID: id, UserID: userID(c),
		Quantity: qty, SKUID: sku, IdempotencyKey: key, TraceID: traceID(c), SpanID: spanID(c)}))
	if ans.Admission != nil {
		c.Locals(localOrderNo, ans.Admission.OrderNo)
	}
	if err := s.refused(c, ans); err != nil {
		return err
	}
	c.Location("/api/v1/orders/" + ans.Admission.OrderNo)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": ans.Admission.OrderNo, "status": seckill.StatusQueued})
}

// orderJSON is the public shape of an order: the order's own fields (an
// absent time omitted, never zero), and on a QUEUED order's poll how many
// orders of its sale wait for their workflow to create them, this one
// included (the starters' backlog): the shop's "N orders are being
// created".
type orderJSON struct {
	*seckill.Order
	Queued int `json:"queued,omitempty"`
}

// caller fills in what the front door knows of who sends r: views into
// the request, read by admission before the handler returns.
func (s *Server) caller(c *fiber.Ctx, r *admission.Request) *admission.Request {
	r.IP = s.clientIP(c)
	r.LimitIP = ratelimit.Key(r.IP)
	r.UserAgent = c.Request().Header.UserAgent()
	r.DeviceCookie = c.Cookies(admission.DeviceCookie)
	r.Ticket = c.Get(admission.TicketHeader)
	return r
}

// refused names the layer that decided an admission's answer, and when to
// retry; its refusal, or nil.
func (s *Server) refused(c *fiber.Ctx, ans admission.Answer) error {
	if ans.Layer != "" {
		c.Set(HeaderLayer, ans.Layer)
	}
	if ans.RetryAfter > 0 {
		setRetryAfter(c, ans.RetryAfter)
	}
	return ans.Err
}

// getOrder: GET /api/v1/orders/{order_no} (owner only).
func (s *Server) getOrder(c *fiber.Ctx) error {
	o, err := s.svc.Orders.Find(c.UserContext(), c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	v := orderJSON{Order: o}
	if o.Status == seckill.StatusQueued {
		// Best effort: the line is a courtesy, the status the answer.
		if n, after, err := s.svc.Line.Wait(c.UserContext(), o.SessionID); err == nil {
			v.Queued = n
			setRetryAfter(c, after)
		}
	}
	return c.JSON(v)
}

// cancelOrder: POST /api/v1/orders/{order_no}/cancel (owner, unpaid). The
// workflow closes the order; the answer is 202 with the status as it is now.
func (s *Server) cancelOrder(c *fiber.Ctx) error {
	ctx := c.UserContext()
	o, err := s.svc.Orders.Find(ctx, c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	if o.Status != seckill.StatusWaitPay && o.Status != seckill.StatusQueued {
		return seckill.Errorf(seckill.ECONFLICT, "order %s is %s and cannot be cancelled", o.OrderNo, o.Status)
	}
	if err := s.svc.Cancels.Cancel(ctx, o.OrderNo, traceID(c)); seckill.ErrorCode(err) == seckill.ENOTFOUND {
		return seckill.Errorf(seckill.ECONFLICT, "order %s is not ready to be cancelled yet; retry in a moment", o.OrderNo)
	} else if err != nil {
		return err
	}
	s.log.Info("cancel requested", "trace_id", traceID(c), "order_no", o.OrderNo)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": o.OrderNo, "status": o.Status})
}
