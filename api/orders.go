package api

import (
	"context"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/metrics"
)

// startDeadline bounds a workflow start that went on in the background
// after the request answered. Past it, the relay takes over.
const startDeadline = 10 * time.Second

type orderBody struct {
	Quantity *int `json:"quantity"`
}

// newOrderNo returns "<session id>-<UUIDv7 hex>": unique without any
// coordination, roughly time-ordered for the index, and telling which
// session's Redis keys hold it.
func newOrderNo(sessionID int64) string {
	u := uuid.Must(uuid.NewV7())
	return strconv.FormatInt(sessionID, 10) + "-" + hex.EncodeToString(u[:])
}

var errBlocked = seckill.Errorf(seckill.EFORBIDDEN, "this account may not buy")

// inWindow refuses orders outside the session's sale window.
func (s *Server) inWindow(sess *seckill.Session) error {
	switch sess.StateAt(s.cfg.Now(), 1) {
	case seckill.SessionUpcoming:
		return seckill.Errorf(seckill.ENOTSTARTED, "session %d starts at %s", sess.ID, sess.StartAt.Format(time.RFC3339))
	case seckill.SessionEnded:
		return seckill.Errorf(seckill.EENDED, "session %d ended at %s", sess.ID, sess.EndAt.Format(time.RFC3339))
	}
	return nil
}

// createOrder: POST /api/v1/sessions/{id}/orders. The checks run cheapest
// first: the global bucket, the sold-out flag and the JWT (middleware),
// then the blocklist, the body and the sale window from process memory;
// only then the Redis rate limits, the ticket and the admission script.
// A refused request never touches stock; losers never reach MySQL or
// Temporal.
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
	var body orderBody
	if err := decodeStrict(c.Body(), &body, true); err != nil {
		return err
	}
	ctx := c.UserContext()
	sess, err := s.sessions.get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.inWindow(sess); err != nil {
		c.Set(HeaderLayer, LayerWindow)
		return err
	}
	qty := 1
	if body.Quantity != nil {
		qty = *body.Quantity
	}
	if qty < 1 || qty > sess.PerUserLimit {
		return seckill.Errorf(seckill.EINVALID, "quantity must be between 1 and %d", sess.PerUserLimit)
	}
	if err := s.distributedLimits(c, user); err != nil {
		return err
	}
	if sess.RequireTicket {
		if err := s.useTicket(c, id, user); err != nil {
			return err
		}
	}
	trace := traceID(c)
	t0 := time.Now()
	resv, left, err := s.gate.Admit(ctx, sess, user, qty, newOrderNo(id), trace, s.cfg.Now())
	s.cfg.Metrics.RedisAdmit.Observe(metrics.Since(t0))
	c.Set(HeaderLayer, LayerRedis)
	if err != nil {
		if seckill.ErrorCode(err) == seckill.ESOLDOUT && left <= 0 {
			s.soldOut.mark(id)
		}
		return err
	}
	if left <= 0 {
		s.soldOut.mark(id)
	}
	// One line per winner (bounded by the stock, unlike the losers): where
	// following a purchase by its trace id starts.
	s.log.Info("order accepted", "trace_id", trace, "order_no", resv.OrderNo, "session_id", id, "user_id", user, "quantity", qty)
	req := &seckill.OrderRequest{Reservation: *resv, SKUID: sess.SKUID, PriceCents: sess.PriceCents, PayTimeout: s.cfg.PayTimeout}
	s.startWorkflow(req)
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": resv.OrderNo, "status": seckill.StatusQueued})
}

var errSoldOut = seckill.Errorf(seckill.ESOLDOUT, "sold out")

// startWorkflow starts the order's workflow, waiting at most StartTimeout.
// The reservation and its pending-start entry are already durable in Redis,
// so the answer does not depend on the start: a slow start goes on in the
// background, a failed one is left to the relay, which starts the same
// workflow ID (a duplicate start is detected, never doubled).
func (s *Server) startWorkflow(req *seckill.OrderRequest) {
	select {
	case s.starts <- struct{}{}:
	default:
		s.log.Warn("too many workflow starts in flight; leaving this one to the relay", "order_no", req.OrderNo, "trace_id", req.TraceID)
		return
	}
	done := make(chan struct{})
	go func() {
		defer func() { <-s.starts }()
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), startDeadline)
		defer cancel()
		t0 := time.Now()
		started, err := s.flow.Start(ctx, req)
		took := time.Since(t0)
		s.pace.observe(took)
		s.cfg.Metrics.WorkflowStart.Observe(took.Seconds())
		if err != nil {
			s.cfg.Metrics.WorkflowStartFailures.Inc()
			s.log.Warn("workflow start failed; the relay will retry", "order_no", req.OrderNo, "trace_id", req.TraceID, "error", err)
			return
		}
		if !started {
			s.log.Info("workflow already started", "order_no", req.OrderNo, "trace_id", req.TraceID)
		}
		if err := s.gate.Started(ctx, req.SessionID, req.OrderNo); err != nil {
			s.log.Warn("could not clear the pending-start entry", "order_no", req.OrderNo, "error", err)
		}
	}()
	if s.pace.slowerThan(s.cfg.StartTimeout) {
		s.cfg.Metrics.WorkflowStartNoWait.Inc()
		return
	}
	select {
	case <-done:
	case <-time.After(s.cfg.StartTimeout):
	}
}

// startPace follows how long workflow starts take: an exponentially
// weighted average over roughly the last eight. When starts take longer
// than StartTimeout, a winner gains nothing by waiting (the start will not
// finish in time) and the wait only holds the shopper's connection while
// Temporal is busy; the answer then goes out at once and the start goes on
// in the background, the relay behind it. So the API never queues behind a
// slow Temporal, and waits again as soon as starts are quick again.
type startPace struct{ avg atomic.Int64 } // nanoseconds

func (p *startPace) observe(d time.Duration) {
	for {
		old := p.avg.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if p.avg.CompareAndSwap(old, next) {
			return
		}
	}
}

func (p *startPace) slowerThan(d time.Duration) bool { return time.Duration(p.avg.Load()) > d }

// orderJSON is the public shape of an order.
type orderJSON struct {
	OrderNo     string         `json:"order_no"`
	SessionID   int64          `json:"session_id"`
	SKUID       int64          `json:"sku_id"`
	UserID      int64          `json:"user_id"`
	Quantity    int            `json:"quantity"`
	AmountCents int64          `json:"amount_cents"`
	Status      seckill.Status `json:"status"`
	CreatedAt   time.Time      `json:"created_at"`
	PayDeadline *time.Time     `json:"pay_deadline"`
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
	o, err := s.gate.Order(ctx, orderNo)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND || seckill.ErrorCode(err) == seckill.EUNAVAILABLE {
		o, err = s.orders.get(ctx, orderNo)
	}
	if err != nil {
		return nil, err
	}
	if owner != 0 && o.UserID != owner {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	if o.Status == seckill.StatusQueued {
		sess, err := s.sessions.get(ctx, o.SessionID)
		if err != nil {
			return nil, err
		}
		o.SKUID, o.AmountCents = sess.SKUID, sess.PriceCents*int64(o.Quantity)
	}
	return o, nil
}

func orderView(o *seckill.Order) orderJSON {
	v := orderJSON{
		OrderNo: o.OrderNo, SessionID: o.SessionID, SKUID: o.SKUID, UserID: o.UserID, Quantity: o.Quantity,
		AmountCents: o.AmountCents, Status: o.Status, CreatedAt: o.CreatedAt,
	}
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
	return c.JSON(orderView(o))
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
