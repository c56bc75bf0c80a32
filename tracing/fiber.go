package tracing

import (
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
)

// HeaderRequestID names a request: the answer carries its trace id there,
// or the client's own id when it sent a sane one.
const HeaderRequestID = "X-Request-ID"

// Served is the Fiber middleware that makes every request a span and
// names it by its trace id, which the answer's X-Request-ID, the error
// body's trace_id, the logs, the ledger rows and the order's workflow all
// carry: logs and traces join on it.
//
// An incoming W3C traceparent is continued only when trusted says the
// peer may choose it (StartServer). A client's X-Request-ID is echoed in
// the answer and kept on the span (http.request.header.x-request-id), but
// it is no trace id: the error body's trace_id and the logs carry the
// trace's. clientIP is the caller as the API resolves it; done puts what
// the route decided on the span once the answer is final.
func Served(trusted func(peer netip.Addr) bool, clientIP func(*fiber.Ctx) string, done func(c *fiber.Ctx, span trace.Span, status int)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, span, id := StartServer(c.UserContext(), fastHeaders{c}, func() bool {
			peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
			return trusted(peer.Unmap())
		}, c.Method())
		// The stores' logs (a slow query) read the id from the context.
		c.SetUserContext(seckill.WithTraceID(ctx, id))
		c.Locals(HeaderRequestID, id)
		// A client's own X-Request-ID is echoed when it is a sane token (the
		// API's contract), copied: fasthttp reuses the request's memory once
		// the handler returns. Otherwise the answer names the trace.
		if v := c.Get(HeaderRequestID); SaneRequestID(v) {
			c.Set(HeaderRequestID, utils.CopyString(v))
		} else {
			c.Set(HeaderRequestID, id)
		}
		if !span.IsRecording() {
			return c.Next()
		}
		defer span.End()
		span.SetAttributes(semconv.HTTPRequestMethodKey.String(c.Method()), semconv.URLPath(c.Path()),
			semconv.ClientAddress(clientIP(c)), semconv.UserAgentOriginal(string(c.Request().Header.UserAgent())))
		if v := c.Get(HeaderRequestID); v != "" {
			span.SetAttributes(attribute.String("http.request.header.x-request-id", v))
		}
		err := c.Next()
		status, route := c.Response().StatusCode(), c.Route().Path
		span.SetName(c.Method() + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
		done(c, span, status)
		return err
	}
}

// RequestID is the request's trace id (hex), as its X-Request-ID answers
// ("" before Served ran).
func RequestID(c *fiber.Ctx) string {
	id, _ := c.Locals(HeaderRequestID).(string)
	return id
}

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
