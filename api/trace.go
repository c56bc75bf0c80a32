package api

import (
	"net/http"
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/tracing"
)

// traceRequest makes every request a span (tracing.Served): a
// traceparent is continued only from a trusted proxy
// (Config.TrustedProxies, the peers whose client-IP header is believed).
func (s *Server) traceRequest() fiber.Handler {
	return tracing.Served(func(peer netip.Addr) bool { return clientip.Trusted(peer, s.cfg.TrustedProxies) },
		func(c *fiber.Ctx) string { return s.clientIP(c).String() }, traced)
}

// traceID is the request's trace id (hex), as its X-Request-ID answers.
func traceID(c *fiber.Ctx) string { return tracing.RequestID(c) }

// spanID is the request's span when it is traced, for what a start made
// after the answer continues (Attempt.SpanID).
func spanID(c *fiber.Ctx) string { return tracing.SpanID(c.UserContext()) }

// purchaseRoute is the route of a purchase, whose span says what
// admission decided.
const purchaseRoute = "/api/v1/sessions/:id/orders"

// localOrderNo is the order number createOrder answered, for the span.
const localOrderNo = "seckill.order_no"

// traced finishes a request's span once its answer is final (s.observe,
// inside, has the error handler write an error's answer): a server error's
// code, and on a purchase what admission decided: the session, the
// shopper, the order number (the one a shopper reports), the verdict
// (ACCEPTED, or the refusal's code) and the layer that gave it, whichever
// layer that was (the front door's middleware or admission).
func traced(c *fiber.Ctx, span trace.Span, status int) {
	if status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, string(metrics.ErrorCode(c.Response().Body())))
	}
	if c.Method() != fiber.MethodPost || c.Route().Path != purchaseRoute {
		return
	}
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
