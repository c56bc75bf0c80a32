package api

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
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

// HeaderIdempotencyKey names the optional key of an order request
// (Stripe's convention): the same key from the same shopper for the same
// session always gets the same answer and order number.
const HeaderIdempotencyKey = "Idempotency-Key"

// admitWait bounds how long a request waits for its admission, queue and
// retries included; past it the answer is 503 with Retry-After, the outcome
// unknown until the retry with the same key.
const admitWait = 3 * time.Second

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
// only then the Redis rate limits, the ticket and the admission script.
// A refused request never touches stock; losers never reach MySQL or
// Temporal.
//
// With an Idempotency-Key, the script pins the answer (reserved, SOLD_OUT
// or LIMIT_EXCEEDED) to the key in the same atomic step, and answers a
// later attempt with that key from the pin. Refusals before the script
// (validation, auth, blocklist, rate limits, ticket, not started,
// UNAVAILABLE) are not pinned: the request never ran, and its retry runs
// afresh. The sold-out flag in memory never answers a keyed request (the
// script does, and pins it), and the end of the sale looks the pin up first.
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
	sess, err := s.sessions.get(ctx, id)
	if err != nil {
		return err
	}
	qty := 1
	if body.Quantity != nil {
		qty = *body.Quantity
	}
	a := &seckill.Attempt{Session: sess, UserID: user, Quantity: qty, TraceID: traceID(c), Now: s.cfg.Now(),
		IdempotencyKey: key, Fingerprint: strconv.Itoa(qty)}
	if err := s.inWindow(sess); err != nil {
		if seckill.ErrorCode(err) == seckill.EENDED {
			if adm, perr := s.gate.Pinned(ctx, a); adm != nil || perr != nil {
				return s.admitted(c, a, adm, perr)
			}
		}
		c.Set(HeaderLayer, LayerWindow)
		return err
	}
	if qty < 1 || qty > sess.PerUserLimit {
		return seckill.Errorf(seckill.EINVALID, "quantity must be between 1 and %d", sess.PerUserLimit)
	}
	if key != "" && s.soldOut.has(id) {
		// soldOutFast let it through: a retry answers from its pin without
		// meeting the rate limits again. A key with no pin goes on to the
		// script, which decides and pins SOLD_OUT (or a unit that came
		// back): a key is never told SOLD_OUT by this process's memory and
		// then sold a unit by the script later.
		if adm, perr := s.gate.Pinned(ctx, a); adm != nil || perr != nil {
			return s.admitted(c, a, adm, perr)
		}
	}
	if err := s.distributedLimits(c, user); err != nil {
		return err
	}
	if sess.RequireTicket {
		if err := s.useTicket(c, a); err != nil {
			return err
		}
	}
	a.OrderNo = newOrderNo(id)
	actx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	t0 := time.Now()
	adm, err := s.gate.AdmitAttempt(actx, a)
	s.cfg.Metrics.RedisAdmit.Observe(metrics.Since(t0))
	return s.admitted(c, a, adm, err)
}

// admitted answers an admission: the refusal, or 202 with the order number
// holding the units (on a replay, the pinned one, whose workflow is started
// again if its reservation is still waiting: the start is idempotent).
func (s *Server) admitted(c *fiber.Ctx, a *seckill.Attempt, adm *seckill.Admission, err error) error {
	id := a.Session.ID
	c.Set(HeaderLayer, LayerRedis)
	if err != nil {
		if seckill.ErrorCode(err) == seckill.ESOLDOUT && adm != nil && adm.Left <= 0 {
			s.soldOut.mark(id)
		}
		return err
	}
	if adm.Left <= 0 {
		s.soldOut.mark(id)
	}
	if adm.Replayed {
		s.log.Info("order replayed for its idempotency key", "trace_id", a.TraceID, "order_no", adm.OrderNo, "session_id", id, "user_id", a.UserID)
	} else {
		// One line per winner (bounded by the stock, unlike the losers):
		// where following a purchase by its trace id starts.
		s.log.Info("order accepted", "trace_id", a.TraceID, "order_no", adm.OrderNo, "session_id", id, "user_id", a.UserID, "quantity", a.Quantity)
	}
	if adm.Reservation != nil {
		s.startWorkflow(&seckill.OrderRequest{Reservation: *adm.Reservation, SKUID: a.Session.SKUID,
			PriceCents: a.Session.PriceCents, PayTimeout: s.cfg.PayTimeout})
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"order_no": adm.OrderNo, "status": seckill.StatusQueued})
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
