package api

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/tracing"
)

const headerRequestID = "X-Request-ID"

// traceRequest makes every request a span and names it by its trace id,
// which the answer's X-Request-ID, the error body's trace_id, the logs,
// the ledger rows and the order's workflow all carry: logs and traces
// join on it.
//
// An incoming W3C traceparent is continued only from a trusted proxy
// (Config.TrustedProxies, the peers whose client-IP header is believed;
// tracing.StartServer). A client's X-Request-ID is echoed in the answer
// and kept on the span (http.request.header.x-request-id), but it is no
// trace id: the error body's trace_id and the logs carry the trace's.
func (s *Server) traceRequest(c *fiber.Ctx) error {
	ctx, span, id := tracing.StartServer(c.UserContext(), fastHeaders{c}, func() bool {
		peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
		return clientip.Trusted(peer.Unmap(), s.cfg.TrustedProxies)
	}, c.Method())
	// The stores' logs (a slow query) read the id from the context.
	c.SetUserContext(seckill.WithTraceID(ctx, id))
	c.Locals(headerRequestID, id)
	// A client's own X-Request-ID is echoed when it is a sane token (the
	// API's contract), copied: fasthttp reuses the request's memory once
	// the handler returns. Otherwise the answer names the trace.
	if v := c.Get(headerRequestID); tracing.SaneRequestID(v) {
		c.Set(headerRequestID, utils.CopyString(v))
	} else {
		c.Set(headerRequestID, id)
	}
	if !span.IsRecording() {
		return c.Next()
	}
	defer span.End()
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(c.Method()), semconv.URLPath(c.Path()),
		semconv.ClientAddress(s.clientIP(c).String()), semconv.UserAgentOriginal(string(c.Request().Header.UserAgent())))
	if v := c.Get(headerRequestID); v != "" {
		span.SetAttributes(attribute.String("http.request.header.x-request-id", v))
	}
	// s.observe, inside, has the error handler write an error's answer:
	// the status and the body are final here.
	err := c.Next()
	status := c.Response().StatusCode()
	route := c.Route().Path
	if c.Method() == fiber.MethodPost && route == purchaseRoute {
		tracePurchase(c, span, status)
	}
	span.SetName(c.Method() + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, string(metrics.ErrorCode(c.Response().Body())))
	}
	return err
}

// traceID is the request's trace id (hex), as its X-Request-ID answers.
func traceID(c *fiber.Ctx) string {
	id, _ := c.Locals(headerRequestID).(string)
	return id
}

// spanID is the request's span when it is traced, for what a start made
// after the answer continues (Attempt.SpanID).
func spanID(c *fiber.Ctx) string { return tracing.SpanID(c.UserContext()) }

// fastHeaders reads a request's headers for the propagator. A value is
// copied: the trace state and baggage keep parts of it, and fasthttp
// reuses the request's memory once the handler returned.
type fastHeaders struct{ c *fiber.Ctx }

func (h fastHeaders) Get(k string) string {
	return strings.Clone(utils.UnsafeString(h.c.Request().Header.Peek(k)))
}
func (h fastHeaders) Set(string, string) {}
func (h fastHeaders) Keys() []string     { return nil }

var _ propagation.TextMapCarrier = fastHeaders{}

// purchaseRoute is the route of a purchase, whose span says what
// admission decided.
const purchaseRoute = "/api/v1/sessions/:id/orders"

// localOrderNo is the order number createOrder answered, for the span.
const localOrderNo = "seckill.order_no"

// tracePurchase puts what admission decided on the purchase's span: the
// session, the shopper, the order number (the one a shopper reports), the
// verdict (ACCEPTED, or the refusal's code) and the layer that gave it,
// whichever layer that was (the front door's middleware or admission).
func tracePurchase(c *fiber.Ctx, span trace.Span, status int) {
	verdict := "ACCEPTED"
	if status != fiber.StatusAccepted {
		verdict = string(metrics.ErrorCode(c.Response().Body()))
	}
	span.SetAttributes(attribute.String("seckill.session_id", c.Params("id")),
		attribute.String("seckill.admission.verdict", verdict),
		attribute.String("seckill.admission.layer", string(c.Response().Header.Peek(HeaderLayer))))
	if u := userID(c); u != 0 {
		span.SetAttributes(semconv.UserID(strconv.FormatInt(u, 10)))
	}
	if no, ok := c.Locals(localOrderNo).(string); ok {
		span.SetAttributes(attribute.String("seckill.order_no", no))
	}
}
