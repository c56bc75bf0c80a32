// Package api is the HTTP front door of seckill, built on Fiber: shopper
// auth, the global rate limit, the order route (its decision is
// admission's), order polling (orders), the signed payment webhooks (the
// intake is payments') and the admin endpoints. Handlers decode, call,
// encode; every error leaves through one mapper as {"code", "message",
// "trace_id"}.
package api

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/ratelimit"
	"github.com/seckill/seckill/shop"
)

// Services are what the routes call, built by internal/app and handed
// in: the use cases, and for each route group a port declared next to its
// handlers with only the calls they make. New builds none of them.
// Admission is required; without Controls, Registrations, Checkout,
// Refund or Backoffice their routes answer 503.
type Services struct {
	// Admission decides purchases, and what the front door asks before
	// them: the sold-out memory, the fleet's rate limits, the blocklist's
	// copy, tickets, captchas and device cookies.
	Admission *admission.Service
	Sessions  SessionCache
	Views     SessionViews
	Orders    OrderFinder
	Line      StartLine
	Cancels   OrderCancels
	History   OrderHistory
	// Payments takes in the payments whose provider's signature held
	// (both webhooks).
	Payments   PaymentIntake
	Checkout   Checkout
	Refund     OrderRefund
	Controls   SessionControls
	Audit      SessionAudit
	Reconcile  Reconciler
	Blocklist  Blocklist
	Events     EventFeed
	Backoffice OrderRecords
	// Registrations take reserved sales' registrations.
	Registrations Registrations
	// Dependencies are the pings of what the API needs to sell, by name
	// (mysql, redis, temporal): /readyz and seckill_dependency_up.
	Dependencies map[string]func(context.Context) error
}

// Config is the HTTP server's behaviour; secrets are required.
type Config struct {
	// JWTSecret signs the dev sign-in's tokens (SECKILL_JWT_SECRET's
	// first).
	JWTSecret []byte
	// Shoppers verifies shoppers' tokens, Operators the admin API's
	// callers (auth.Shoppers, auth.Operators: internal/app builds them
	// with the shop login's JWKS, the named tokens and the identity
	// provider). Both are required.
	Shoppers  ShopperTokens
	Operators OperatorAuth
	// WebhookSecret verifies the payment webhook's signature, and so does
	// each of RotatedWebhookSecrets during a rollover.
	WebhookSecret         []byte
	RotatedWebhookSecrets [][]byte
	// Door measures the order route; internal/app gives the same one to
	// the starter, which holds its starts while a burst is answered. The
	// Server's own when nil.
	Door *admission.FrontDoor
	// Limits are the HTTP server's own rate limits.
	Limits Limits
	// DependencyPing is how often the API pings MySQL, Redis and Temporal
	// for seckill_dependency_up (metrics.DependencyPing when 0; negative:
	// never, for a test that counts every command a server sees).
	DependencyPing time.Duration
	// Global is the token bucket in front of everything (fleet.Share:
	// this process's share of the fleet's budget); nil: none.
	Global interface{ Allow() bool }
	// Metrics collects the API's Prometheus metrics (a fresh set when nil).
	Metrics *metrics.Metrics
	// ProxyHeader names the header carrying the client IP when the API runs
	// behind proxies (e.g. X-Forwarded-For); empty uses the peer address.
	ProxyHeader string
	Logger      *slog.Logger
	// TrustedProxies are the peers whose ProxyHeader is believed (see
	// clientip.Resolve). Both or neither: a header believed from any peer would let
	// every client choose its own address.
	TrustedProxies []netip.Prefix
	// Dev mounts the dev-only endpoint under /dev/v1 (a token for any
	// user) and shows its sign-in on the shop page. Only `seckill dev`
	// sets it: anyone could buy as anyone.
	Dev bool
	// StripeEvents, when set, verifies the events of Stripe's webhook
	// (POST /api/v1/payments/stripe/webhook): only with the stripe
	// provider.
	StripeEvents StripeEvents
	// CheckoutPages, when set, are the sandbox provider's hosted checkout
	// pages, served under /dev/checkout/ (only when it is the provider).
	CheckoutPages http.Handler
	// Now is the clock (tests pin it); time.Now when nil.
	Now func() time.Time
	// WorkflowLink, when set, is the address of an order's workflow in
	// Temporal's Web UI (GET /admin/v1/orders/{order_no} shows it).
	WorkflowLink func(orderNo string) string
	// CORSOrigins are the origins whose pages may call the shopper
	// routes from the browser (with credentials); empty: same origin only.
	CORSOrigins []string
}

// Limits are the HTTP server's rate limits, in each process's memory
// (the fleet-wide ones, per user, IP and device, are admission's);
// requests per second, 0 turns a limit off.
type Limits struct {
	// Read is per client IP on the public reads (the session list, one
	// session, order polling), in each process's memory.
	Read int
	// AdminFails is how many failed admin credentials a client IP may
	// send a minute, in each process's memory; past it the admin API
	// answers it 429 before looking at its credential (ratelimit.PerMinute).
	AdminFails int
}

// Server holds the API's dependencies.
type Server struct {
	cfg  Config
	svc  Services
	log  *slog.Logger
	shop *shop.Shop
	// series caches the metric children of the hot path.
	series *metrics.Series
	// reads limits the public reads per client IP (nil: off).
	reads *ratelimit.PerAddr
	// adminFails limits failed admin credentials per client IP (nil: off).
	adminFails *ratelimit.PerAddr
	// draining is set by Drain: /readyz answers 503 from then on.
	draining atomic.Bool
	// exportPage is how many orders the export reads at a time
	// (defaultExportPage when 0; tests make it small).
	exportPage int
	// writeTimeout bounds writing an answer (writeTimeout when 0; tests
	// make it short); a streamed export gets it again with every page.
	writeTimeout time.Duration
}

// bodyLimit caps request bodies: every request of this API is a few
// hundred bytes, but Stripe's events, whole objects (an old API version's
// payment intent with its charges and metadata), get the larger
// stripeBodyLimit on their one route (bodyLimitOf). headerLimit bounds the
// request line and headers (Fiber's read buffer, 4 KB unless set): a shop
// domain's cookies ride on every purchase, and HAProxy in front passes 16 KB.
const (
	bodyLimit       = 8 << 10
	stripeBodyLimit = 256 << 10
	headerLimit     = 16 << 10
)

// writeTimeout bounds writing an answer: a client that reads nothing for
// that long is let go.
const writeTimeout = 10 * time.Second

// stripeWebhookPath is the route of Stripe's events.
const stripeWebhookPath = "/api/v1/payments/stripe/webhook"

// New builds the server on the services internal/app built. It does not
// listen; call App().Listen.
func New(cfg Config, svc Services) (*Server, error) {
	switch {
	case len(cfg.JWTSecret) == 0:
		return nil, errors.New("SECKILL_JWT_SECRET is required")
	case len(cfg.WebhookSecret) == 0:
		return nil, errors.New("SECKILL_WEBHOOK_SECRET is required")
	case cfg.Shoppers == nil || cfg.Operators == nil:
		return nil, errors.New("api: Config.Shoppers and Config.Operators are required (who may call)")
	case svc.Admission == nil:
		return nil, errors.New("api: Services.Admission is required (the purchase decision)")
	}
	if err := clientip.CheckProxies(cfg.ProxyHeader, cfg.TrustedProxies); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Door == nil {
		cfg.Door = &admission.FrontDoor{}
	}
	s := &Server{cfg: cfg, svc: svc, log: cfg.Logger, series: metrics.NewSeries(cfg.Metrics)}
	page, err := shop.New(shop.Options{Dev: cfg.Dev})
	if err != nil {
		return nil, err
	}
	s.shop = page
	if cfg.Dev {
		s.log.Warn("dev endpoints are mounted under /dev/v1: anyone can sign in as anyone; never in production")
	}
	s.reads = ratelimit.PerSecond(cfg.Limits.Read)
	s.adminFails = ratelimit.PerMinute(cfg.Limits.AdminFails)
	return s, nil
}

// App returns the Fiber app with every route.
func (s *Server) App() *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "seckill",
		BodyLimit:             bodyLimit,
		ReadBufferSize:        headerLimit,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          cmp.Or(s.writeTimeout, writeTimeout),
		// One spelling per route: /METRICS, /Admin/v1/… and /healthz/ are
		// no route, so an edge rule on a path cannot be dodged by case or
		// a trailing slash (Fiber, like the edge, routes the path as sent:
		// no unescaping, no cleaning).
		CaseSensitive: true,
		StrictRouting: true,
		// No ProxyHeader: Fiber would believe it from any peer; the client
		// IP comes from clientIP, which checks the peer first.
	})
	s.limitBodies(app)
	app.Use(s.traceRequest(), s.observe, s.recoverPanics())

	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(buildinfo.Healthy()) })
	app.Get("/readyz", s.ready)
	app.Get("/metrics", adaptor.HTTPHandler(s.cfg.Metrics.Handler()))
	app.Get("/openapi.json", s.readLimit, s.openAPI)

	s.shop.Mount(app)

	// A route whose service this process was not given answers 503.
	controls, desk := needs(s.svc.Controls != nil, "session controls"), needs(s.svc.Registrations != nil, "registrations")
	checkout, backoffice := needs(s.svc.Checkout != nil, "a payment provider"), needs(s.svc.Backoffice != nil, "the order records")

	v1 := app.Group("/api/v1")
	if len(s.cfg.CORSOrigins) > 0 {
		v1.Use(s.cors)
	}
	v1.Get("/sessions", s.readLimit, s.listSessions)
	v1.Get("/sessions/:id", s.readLimit, s.getSession)
	v1.Get("/device", s.readLimit, s.device)
	v1.Post("/sessions/:id/orders", s.countDoor, s.soldOutFast, s.globalLimit, s.authorize, s.createOrder)
	v1.Post("/sessions/:id/ticket", s.globalLimit, s.authorize, s.issueTicket)
	v1.Post("/sessions/:id/captcha", s.globalLimit, s.authorize, s.newCaptcha)
	v1.Post("/sessions/:id/registrations", s.globalLimit, s.authorize, desk, s.register)
	v1.Get("/sessions/:id/registration", s.readLimit, s.authorize, s.shopperLimits, desk, s.registration)
	v1.Get("/sessions/:id/registrants", s.readLimit, desk, s.registrantList)
	v1.Get("/captchas/:captcha_id/audio", s.readLimit, s.authorize, s.shopperLimits, s.captchaAudio)
	v1.Get("/orders", s.readLimit, s.authorize, s.shopperLimits, query("limit", "cursor"), s.listOrders)
	v1.Get("/orders/:order_no", s.readLimit, s.authorize, s.getOrder)
	v1.Post("/orders/:order_no/cancel", s.globalLimit, s.authorize, s.shopperLimits, s.cancelOrder)
	v1.Post("/orders/:order_no/payment", s.globalLimit, s.authorize, s.shopperLimits, checkout, s.createPayment)
	// Stripe's route only with Stripe as the provider, and then only it:
	// elsewhere nothing verifies Stripe's events, and with Stripe a payment
	// signed with SECKILL_WEBHOOK_SECRET would be one Stripe never took. A
	// route that cannot accept a payment would only be a door to probe:
	// the catch-all answers 404 NOT_FOUND instead.
	if s.cfg.StripeEvents != nil {
		app.Post(stripeWebhookPath, s.stripeWebhook)
	} else {
		v1.Post("/payments/webhook", s.webhook)
	}

	admin := app.Group("/admin/v1", s.authenticateOperator)
	admin.Post("/sessions", s.authorize, controls, s.createSession)
	admin.Post("/sessions/:id/preheat", s.authorize, query("force"), controls, s.preheat)
	admin.Get("/sessions/:id/reconcile", s.authorize, s.reconcile)
	admin.Post("/sessions/:id/repair", s.authorize, s.repair)
	admin.Patch("/sessions/:id", s.authorize, controls, s.changeSession(seckill.ActionUpdate))
	admin.Post("/sessions/:id/pause", s.authorize, controls, s.changeSession(seckill.ActionPause))
	admin.Post("/sessions/:id/resume", s.authorize, controls, s.changeSession(seckill.ActionResume))
	admin.Post("/sessions/:id/end", s.authorize, controls, s.changeSession(seckill.ActionEnd))
	admin.Post("/sessions/:id/stock", s.authorize, controls, s.changeSession(seckill.ActionAddStock))
	admin.Get("/sessions/:id/audit", s.authorize, s.sessionAudit)
	admin.Post("/orders/:order_no/refund", s.authorize, needs(s.svc.Refund != nil, "refunds"), s.refundOrder)
	admin.Get("/events", s.authorize, query("cursor", "limit"), s.listEvents)
	admin.Get("/orders", s.authorize, query(append(orderFilters, "limit", "cursor")...), backoffice, s.adminOrders)
	admin.Get("/orders/export", s.authorize, query(orderFilters...), backoffice, s.exportOrders)
	admin.Get("/orders/:order_no", s.authorize, backoffice, s.adminOrder)
	admin.Put("/blocklist/:user_id", s.authorize, s.setBlocked(true))
	admin.Delete("/blocklist/:user_id", s.authorize, s.setBlocked(false))
	if s.cfg.Dev {
		app.Post("/dev/v1/token", s.devToken)
	}
	s.mountCheckoutPages(app)

	app.Use(func(c *fiber.Ctx) error {
		return seckill.Errorf(seckill.ENOTFOUND, "no route %s %s", c.Method(), c.Path())
	})
	return app
}

// needs lets a request through to a route whose service the process was
// given, and answers UNAVAILABLE naming it on one it was not.
func needs(given bool, what string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !given {
			return seckill.Errorf(seckill.EUNAVAILABLE, "%s: not configured in this process", what)
		}
		return c.Next()
	}
}

// Start runs the HTTP server's background loops until ctx ends: the
// dependency pings and the front door's samples (admission's loops and
// the fleet's heartbeat are internal/app's, which built them).
func (s *Server) Start(ctx context.Context) {
	if s.cfg.DependencyPing >= 0 {
		go s.cfg.Metrics.WatchDependencies(ctx, s.cfg.DependencyPing, s.svc.Dependencies)
	}
	s.cfg.Door.Start(ctx)
}

// Drain turns /readyz to 503 for good: the process was told to stop, and
// a balancer that polls it must take it out while it still serves.
func (s *Server) Drain() { s.draining.Store(true) }

// ready answers 200 when MySQL, Redis and Temporal all answer, until Drain.
func (s *Server) ready(c *fiber.Ctx) error {
	if s.draining.Load() {
		return seckill.Errorf(seckill.EUNAVAILABLE, "draining: this process is shutting down")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	for name, ping := range s.svc.Dependencies {
		if err := ping(ctx); err != nil {
			s.log.Warn("readyz: dependency down", "dependency", name, "error", err)
			return seckill.Errorf(seckill.EUNAVAILABLE, "%s is not reachable", name)
		}
	}
	return c.JSON(fiber.Map{"status": "ready"})
}
