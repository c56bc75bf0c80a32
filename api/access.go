package api

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/ratelimit"
)

// access is who may call a route: nobody in particular, a shopper, the
// payment provider (its signature, checked by the handler), or an
// operator of at least a role.
type access struct {
	who  string
	role seckill.Role
}

var (
	publicRoute   = access{who: "public"}
	shopperRoute  = access{who: "shopper"}
	providerRoute = access{who: "provider"}
	needViewer    = access{who: "operator", role: seckill.RoleViewer}
	needOperator  = access{who: "operator", role: seckill.RoleOperator}
	needAdmin     = access{who: "operator", role: seckill.RoleAdmin}
)

// routeAccess is every route of the API and who may call it: the one
// place to read who may do what. authorize enforces it, a route missing
// here is refused to everyone, and TestEveryRouteHasAnAccessRule fails
// for it. GET routes answer HEAD under the same rule.
var routeAccess = map[string]access{
	"GET /healthz":      publicRoute,
	"GET /readyz":       publicRoute,
	"GET /metrics":      publicRoute,
	"GET /openapi.json": publicRoute,
	"GET /":             publicRoute, // the shop page
	"GET /shop/:name":   publicRoute,

	"GET /api/v1/sessions":     publicRoute,
	"GET /api/v1/sessions/:id": publicRoute,
	"GET /api/v1/device":       publicRoute,

	"POST /api/v1/sessions/:id/orders":        shopperRoute,
	"POST /api/v1/sessions/:id/ticket":        shopperRoute,
	"POST /api/v1/sessions/:id/registrations": shopperRoute,
	"GET /api/v1/sessions/:id/registration":   shopperRoute,
	"GET /api/v1/sessions/:id/registrants":    publicRoute,
	"POST /api/v1/sessions/:id/captcha":       shopperRoute,
	"GET /api/v1/captchas/:captcha_id/audio":  shopperRoute,
	"GET /api/v1/orders":                      shopperRoute,
	"GET /api/v1/orders/:order_no":            shopperRoute,
	"POST /api/v1/orders/:order_no/cancel":    shopperRoute,
	"POST /api/v1/orders/:order_no/payment":   shopperRoute,
	"POST /api/v1/payments/webhook":           providerRoute,
	"POST /api/v1/payments/stripe/webhook":    providerRoute,

	"GET /admin/v1/sessions/:id/reconcile":   needViewer,
	"GET /admin/v1/sessions/:id/audit":       needViewer,
	"GET /admin/v1/events":                   needViewer,
	"GET /admin/v1/orders":                   needViewer,
	"GET /admin/v1/orders/export":            needViewer,
	"GET /admin/v1/orders/:order_no":         needViewer,
	"POST /admin/v1/sessions/:id/pause":      needOperator,
	"POST /admin/v1/sessions/:id/resume":     needOperator,
	"POST /admin/v1/sessions/:id/end":        needOperator,
	"POST /admin/v1/sessions/:id/stock":      needOperator,
	"POST /admin/v1/orders/:order_no/refund": needOperator,
	"POST /admin/v1/sessions":                needAdmin,
	"PATCH /admin/v1/sessions/:id":           needAdmin,
	"POST /admin/v1/sessions/:id/preheat":    needAdmin,
	"POST /admin/v1/sessions/:id/repair":     needAdmin,
	"PUT /admin/v1/blocklist/:user_id":       needAdmin,
	"DELETE /admin/v1/blocklist/:user_id":    needAdmin,

	// Only under `seckill dev` (Config.Dev): anyone may sign in as anyone
	// and pay the sandbox's payments.
	"POST /dev/v1/token":             publicRoute,
	"GET /dev/checkout/:payment_id":  publicRoute,
	"POST /dev/checkout/:payment_id": publicRoute,
}

// accessByRoute is routeAccess by path, then method: every request looks
// its rule up without building a key.
var accessByRoute = func() map[string]map[string]access {
	out := map[string]map[string]access{}
	for key, a := range routeAccess {
		method, path, _ := strings.Cut(key, " ")
		if out[path] == nil {
			out[path] = map[string]access{}
		}
		out[path][method] = a
	}
	return out
}()

// accessOf is the rule of the route that matched c.
func accessOf(c *fiber.Ctx) (access, bool) {
	method := c.Method()
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	a, ok := accessByRoute[c.Route().Path][method]
	return a, ok
}

const localOperator = "seckill.operator"

// authenticateOperator runs in front of every /admin/v1 route: who the
// credential names, or 401 (the routes' roles are authorize's).
func (s *Server) authenticateOperator(c *fiber.Ctx) error {
	tok, _ := bearer(c)
	op, err := s.checkOperator(c, tok)
	if err != nil {
		return err
	}
	if op.Via == seckill.CredentialBootstrap {
		s.log.Warn("admin call with the bootstrap token (SECKILL_ADMIN_TOKEN): create named operators with `seckill operators add` and keep it for emergencies",
			"trace_id", traceID(c), "method", c.Method(), "path", c.Path(), "from", s.clientIP(c).String())
	}
	c.Locals(localOperator, op)
	return c.Next()
}

// checkOperator authenticates an admin credential within its address's
// budget of failures (Limits.AdminFails): an address out of it is 429
// before its credential costs a lookup.
func (s *Server) checkOperator(c *fiber.Ctx, tok string) (*seckill.Operator, error) {
	if s.adminFails == nil {
		return s.cfg.Operators.Authenticate(c.UserContext(), tok)
	}
	giveBack, wait, ok := s.adminFails.Reserve(s.clientIP(c), time.Now())
	if !ok {
		return nil, rateLimited(c, wait)
	}
	op, err := s.cfg.Operators.Authenticate(c.UserContext(), tok)
	// Only a refused credential counts: one that held, or a store that
	// could not answer, costs the address nothing.
	if seckill.ErrorCode(err) != seckill.EUNAUTHORIZED {
		giveBack()
	}
	return op, err
}

// authorize enforces the matched route's rule (routeAccess): a shopper's
// token, or the authenticated operator's role. A route without a rule is
// refused: forgetting one must not open it.
func (s *Server) authorize(c *fiber.Ctx) error {
	a, ok := accessOf(c)
	if !ok {
		s.log.Error("route has no access rule: refused", "method", c.Method(), "route", c.Route().Path)
		return seckill.Errorf(seckill.EFORBIDDEN, "this route has no access rule")
	}
	switch a.who {
	case shopperRoute.who:
		return s.shopper(c)
	case needOperator.who:
		if err := s.allow(c, a.role); err != nil {
			return err
		}
	}
	return c.Next()
}

// allow refuses an operator whose role is below role.
func (s *Server) allow(c *fiber.Ctx, role seckill.Role) error {
	op := operatorOf(c)
	if op == nil {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "operator credential required")
	}
	if !op.Role.Allows(role) {
		return seckill.Errorf(seckill.EFORBIDDEN, "operator %s has the role %s; this needs %s", op.Name, op.Role, role)
	}
	return nil
}

// operatorOf is the operator authenticateOperator found (nil outside
// /admin/v1).
func operatorOf(c *fiber.Ctx) *seckill.Operator {
	op, _ := c.Locals(localOperator).(*seckill.Operator)
	return op
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

const localUser = "seckill.user"

// ShopperTokens verifies a shopper's bearer token (auth.Shoppers), and
// reads whom one of ours names without checking it (for the sold-out
// memory's refusals, which a forged token gets alike).
type ShopperTokens interface {
	Verify(token string) (userID int64, err error)
	Named(token string) (userID int64, ok bool)
}

// OperatorAuth names the operator of an admin credential
// (auth.Operators).
type OperatorAuth interface {
	Authenticate(ctx context.Context, token string) (*seckill.Operator, error)
}

// shopper authenticates a shopper and stores the user id for the handler.
func (s *Server) shopper(c *fiber.Ctx) error {
	id, err := s.shopperID(c)
	if err != nil {
		return err
	}
	c.Locals(localUser, id)
	return c.Next()
}

// shopperID is the shopper the request's bearer token names.
func (s *Server) shopperID(c *fiber.Ctx) (int64, error) {
	tok, ok := bearer(c)
	if !ok {
		return 0, seckill.Errorf(seckill.EUNAUTHORIZED, "missing bearer token")
	}
	return s.cfg.Shoppers.Verify(tok)
}

func userID(c *fiber.Ctx) int64 {
	id, _ := c.Locals(localUser).(int64)
	return id
}

// countDoor is the order route's first handler: it counts the request in
// and out of the front door, whatever answers it (the memory, a limit, the
// script).
func (s *Server) countDoor(c *fiber.Ctx) error {
	s.cfg.Door.Enter()
	defer s.cfg.Door.Leave()
	return c.Next()
}

// globalLimit is the global token bucket (this process's share of it),
// the first limit an admission meets (after the sold-out memory).
func (s *Server) globalLimit(c *fiber.Ctx) error {
	if s.cfg.Global != nil && !s.cfg.Global.Allow() {
		c.Set(HeaderLayer, LayerGlobalLimit)
		return rateLimited(c, time.Second)
	}
	return c.Next()
}

// soldOutFast answers SOLD_OUT from memory for a session this process saw
// sell out (admission's SoldOutFast), before the global bucket: its losers
// are told to stop, not 429 (retry). The shopper's token is read here
// only for a keyed request that may have won, whose holdings decide.
func (s *Server) soldOutFast(c *fiber.Ctx) error {
	who := admission.Shopper{
		Named: func() (int64, bool) {
			tok, _ := bearer(c)
			return s.cfg.Shoppers.Named(tok)
		},
		Verified: func() (int64, bool, error) {
			id, err := s.shopperID(c)
			return id, auth.Forged(err), err
		},
	}
	if s.svc.Admission.SoldOutFast(c.Params("id"), utils.UnsafeString(c.Request().Header.Peek(HeaderIdempotencyKey)), who) {
		c.Set(HeaderLayer, LayerSoldOutMemory)
		return admission.ErrSoldOut
	}
	return c.Next()
}

// shopperLimits applies the fleet's per-user and per-IP limits
// (admission's) to a shopper's call that costs the stores or the payment
// provider. If Redis cannot answer, the call is refused UNAVAILABLE: a
// limit is never skipped.
func (s *Server) shopperLimits(c *fiber.Ctx) error {
	if err := s.refused(c, s.svc.Admission.Limits.Allow(c.UserContext(), userID(c), ratelimit.Key(s.clientIP(c)), "")); err != nil {
		return err
	}
	return c.Next()
}

// HeaderTime carries the server's clock, in Unix milliseconds, on the
// answers of the reads a shop page polls: the clock its Idempotency-Keys
// are stamped with, known to within half a round trip (Date has whole
// seconds only).
const HeaderTime = "X-Seckill-Time"

// readLimit is the middleware of the reads (the session list, one session,
// order polling): 429 RATE_LIMITED with Retry-After past Limits.Read
// requests per second from one client IP, counted in this process's memory
// (ratelimit.PerSecond); the answer carries HeaderTime.
func (s *Server) readLimit(c *fiber.Ctx) error {
	if s.reads != nil && !s.reads.Allow(s.clientIP(c), time.Now()) {
		return rateLimited(c, time.Second)
	}
	c.Set(HeaderTime, strconv.FormatInt(s.cfg.Now().UnixMilli(), 10))
	return c.Next()
}

func rateLimited(c *fiber.Ctx, retryAfter time.Duration) error {
	setRetryAfter(c, retryAfter)
	return admission.ErrRateLimited
}

// setRetryAfter says, in whole seconds (at least one), when to retry.
func setRetryAfter(c *fiber.Ctx, d time.Duration) {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Max(1, math.Ceil(d.Seconds())))))
}
