package api

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/checkout"
	"github.com/seckill/seckill/metrics"
)

// OrderViews are the cached views polls read (MySQL only on a miss), and
// the backlog a QUEUED order's poll shows.
type OrderViews interface {
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
	Backlog(ctx context.Context, sessionID int64) (int, error)
}

type orderBody struct {
	Quantity *int `json:"quantity"`
}

var errBlocked = seckill.Errorf(seckill.EFORBIDDEN, "this account may not buy")

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
	bad := len(k) > seckill.MaxIdempotencyKey
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e
	}
	if bad {
		return "", seckill.Errorf(seckill.EINVALID, "%s must be 1 to %d printable ASCII characters (a UUID is a good key)",
			HeaderIdempotencyKey, seckill.MaxIdempotencyKey)
	}
	return strings.Clone(k), nil
}

// createOrder: POST /api/v1/sessions/{id}/orders. The checks run cheapest
// first: the global bucket, the sold-out flag and the JWT (middleware),
// then the blocklist, the body and the sale window from process memory;
// only then the Redis rate limits, the risk check (riskCheck), the ticket
// and the admission script.
// A refused request never touches stock; losers never reach MySQL or
// Temporal.
//
// With an Idempotency-Key, the script pins a reservation to the key in
// the same atomic step, and answers a later attempt with that key from the
// pin. A refused key is not stored (losers cost Redis nothing) and stays
// refused by its time (seckill.KeyClockSkew). Refusals before the script
// (validation, auth, blocklist, rate limits, ticket, not started,
// UNAVAILABLE) leave nothing behind either: the request never ran, and its
// retry runs afresh. After a sell-out, a pause or the end of the sale, a
// keyed request is answered from memory or from its pin (a read), never
// by the script.
func (s *Server) createOrder(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	user := userID(c)
	if s.blocked.has(user) {
		c.Set(HeaderLayer, LayerBlocklist)
		return errBlocked
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	var body orderBody
	if err := decodeStrict(c.Body(), &body, true); err != nil {
		return err
	}
	ctx := c.UserContext()
	sess, err := s.sessions.Get(ctx, id)
	if err != nil {
		return err
	}
	qty := 1
	if body.Quantity != nil {
		qty = *body.Quantity
	}
	a := &seckill.Attempt{Session: sess, UserID: user, Quantity: qty, TraceID: traceID(c), Now: s.cfg.Now(),
		IdempotencyKey: key, Fingerprint: strconv.Itoa(qty)}
	a.KeyTime, _ = seckill.KeyTime(key)
	if ans, pinned := s.checkout.Window(ctx, a); pinned {
		return s.admitted(c, a, ans)
	} else if ans.Err != nil {
		if seckill.ErrorCode(ans.Err) != seckill.EINVALID {
			c.Set(HeaderLayer, LayerWindow)
		}
		return ans.Err
	}
	if key != "" && s.soldOut.keyed(id, a.KeyTime) == keyedPin {
		// soldOutFast let it through: it may hold a reservation. Its pin
		// says (one read, no rate limits: nothing is decided); without
		// one it gets the refusal the script would give it, and stays
		// refused (keyedMark). A key too new for this process's mark goes
		// on to the script.
		return s.admitted(c, a, s.checkout.SoldOut(ctx, a))
	}
	if err := s.distributedLimits(c, user); err != nil {
		return err
	}
	// A reserved sale ran the risk check and the ticket at registration;
	// at its start only registrants get past the script.
	if !sess.Registers() {
		if err := s.riskCheck(c, a); err != nil {
			return err
		}
		if sess.RequireTicket {
			if err := s.useTicket(c, a); err != nil {
				return err
			}
		}
	}
	t0 := time.Now()
	ans := s.checkout.Admit(ctx, a)
	s.cfg.Metrics.RedisAdmit.Observe(metrics.Since(t0))
	return s.admitted(c, a, ans)
}

// admitted answers an admission: the refusal, or 202 with the order number
// holding the units (the checkout has handed the order to the starter).
func (s *Server) admitted(c *fiber.Ctx, a *seckill.Attempt, ans checkout.Answer) error {
	id, adm := a.Session.ID, ans.Admission
	c.Set(HeaderLayer, LayerRedis)
	if ans.Err != nil {
		if seckill.ErrorCode(ans.Err) == seckill.ESOLDOUT && adm != nil && adm.Left <= 0 {
			s.soldOut.mark(id)
		}
		return ans.Err
	}
	if adm.Left <= 0 {
		s.soldOut.mark(id)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": adm.OrderNo, "status": seckill.StatusQueued})
}

var errSoldOut = seckill.Errorf(seckill.ESOLDOUT, "sold out")

// orderJSON is the public shape of an order: the order's own fields, but
// pay_deadline is null for an order that has none (FAILED: the zero time
// is not a deadline).
type orderJSON struct {
	*seckill.Order
	PayDeadline *time.Time `json:"pay_deadline"`
	// Queued, on a QUEUED order's poll: how many orders of its sale wait
	// for their workflow to create them, this one included (the starters'
	// backlog): the shop's "N orders are being created".
	Queued int `json:"queued,omitempty"`
}

// findOrder returns an order by number from the Redis view (the common
// path), falling back to MySQL, and fills in what a QUEUED view lacks from
// the session. Orders of other users are NOT_FOUND: their existence is not
// revealed. A number that cannot be one of ours ("<session id>-<unique>")
// is NOT_FOUND without a lookup, and MySQL sees at most one query per
// unknown number per second (orderLookup).
func (s *Server) findOrder(ctx context.Context, orderNo string, owner int64) (*seckill.Order, error) {
	if len(orderNo) > 64 {
		return nil, seckill.Errorf(seckill.EINVALID, "order_no is too long")
	}
	if _, ok := seckill.OrderNoSession(orderNo); !ok {
		return nil, orderNotFound(orderNo)
	}
	// A path parameter is a view into the request buffer; the order found
	// may carry it (a QUEUED view) into signals and logs.
	orderNo = strings.Clone(orderNo)
	o, err := s.gate.Order(ctx, orderNo)
	if code := seckill.ErrorCode(err); code == seckill.ENOTFOUND || code == seckill.EUNAVAILABLE {
		redisErr := err
		o, err = s.orders.get(ctx, orderNo)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND && code == seckill.EUNAVAILABLE {
			// A QUEUED order lives in Redis alone, and Redis could not
			// say: "not found" would be final for a payment provider (a
			// payment dropped) and for a polling shopper. Unknown is 503.
			return nil, redisErr
		}
	}
	if err != nil {
		return nil, err
	}
	if owner != 0 && o.UserID != owner {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	if o.Status == seckill.StatusQueued {
		sess, err := s.sessions.Get(ctx, o.SessionID)
		if err != nil {
			return nil, err
		}
		o.SKUID, o.AmountCents = sess.SKUID, sess.PriceCents*int64(o.Quantity)
		if o.PayDeadline.IsZero() {
			// A QUEUED order is payable already, and its deadline counts
			// from the reservation (seckill.NewOrderRequest): the shopper
			// sees the same one before and after the row exists.
			o.PayDeadline = o.CreatedAt.Add(s.cfg.PayTimeout)
		}
	}
	return o, nil
}

func orderView(o *seckill.Order) orderJSON {
	v := orderJSON{Order: o}
	if !o.PayDeadline.IsZero() {
		d := o.PayDeadline
		v.PayDeadline = &d
	}
	return v
}

// getOrder: GET /api/v1/orders/{order_no} (owner only).
func (s *Server) getOrder(c *fiber.Ctx) error {
	o, err := s.findOrder(c.UserContext(), c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	v := orderView(o)
	if o.Status == seckill.StatusQueued {
		// Best effort: the queue view is a courtesy, the status the answer.
		if n, err := s.gate.Backlog(c.UserContext(), o.SessionID); err == nil {
			v.Queued = n
		}
	}
	return c.JSON(v)
}

// cancelOrder: POST /api/v1/orders/{order_no}/cancel (owner, unpaid). The
// workflow closes the order; the answer is 202 with the status as it is now.
func (s *Server) cancelOrder(c *fiber.Ctx) error {
	ctx := c.UserContext()
	o, err := s.findOrder(ctx, c.Params("order_no"), userID(c))
	if err != nil {
		return err
	}
	if o.Status != seckill.StatusWaitPay && o.Status != seckill.StatusQueued {
		return seckill.Errorf(seckill.ECONFLICT, "order %s is %s and cannot be cancelled", o.OrderNo, o.Status)
	}
	if err := s.flow.Cancel(ctx, o.OrderNo, traceID(c)); seckill.ErrorCode(err) == seckill.ENOTFOUND {
		return seckill.Errorf(seckill.ECONFLICT, "order %s is not ready to be cancelled yet; retry in a moment", o.OrderNo)
	} else if err != nil {
		return err
	}
	s.log.Info("cancel requested", "trace_id", traceID(c), "order_no", o.OrderNo)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": o.OrderNo, "status": o.Status})
}
