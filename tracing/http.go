package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Transport is rt (http.DefaultTransport when nil) with a client span
// around each request and the trace context in its headers (otelhttp),
// when tracing is on; rt itself otherwise.
func Transport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if !Enabled() {
		return rt
	}
	return otelhttp.NewTransport(rt)
}

// traceContext reads W3C traceparent (and tracestate), whatever the
// process's global propagators are.
var traceContext propagation.TraceContext

// StartServer starts the span of a request served, named name, with its
// trace id (hex). An incoming W3C traceparent in headers is continued only
// when trusted says its sender may choose it (a trusted proxy): anyone
// else could pick the trace id their requests are logged under, or force
// sampling; from them a new trace starts, linked to the incoming one.
//
// With tracing off (no SDK's tracer provider installed) no span is
// started at all, the tracer is not even asked: the context carries ids
// of the W3C shape (NewSpanContext), or the trusted parent's trace id, so
// every request still has an id that logs and rows join on, and a refusal
// costs no more than that.
func StartServer(ctx context.Context, headers propagation.TextMapCarrier, trusted func() bool, name string) (context.Context, trace.Span, string) {
	_, recording := otel.GetTracerProvider().(*sdktrace.TracerProvider)
	var opts []trace.SpanStartOption
	if incoming := traceContext.Extract(ctx, headers); trace.SpanContextFromContext(incoming).IsValid() {
		if trusted() {
			ctx = incoming
		} else if recording {
			opts = append(opts, trace.WithLinks(trace.LinkFromContext(incoming)))
		}
	}
	if !recording {
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			sc = NewSpanContext()
			ctx = trace.ContextWithSpanContext(ctx, sc)
		}
		return ctx, trace.SpanFromContext(ctx), sc.TraceID().String()
	}
	ctx, span := Tracer().Start(ctx, name, append(opts, trace.WithSpanKind(trace.SpanKindServer))...)
	return ctx, span, span.SpanContext().TraceID().String()
}

// SaneRequestID reports whether a client's X-Request-ID is worth echoing:
// 1–64 characters of a token (letters, digits, - _ . :), nothing a log or
// a header could be made to carry.
func SaneRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b == '-' || b == '_' || b == '.' || b == ':' || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z')) {
			return false
		}
	}
	return true
}
