package tracing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// Trace ids made while tracing is off are a random per-process prefix and
// a counter: of the W3C shape, unique across processes with overwhelming
// probability, and far cheaper than 16 random bytes per request.
var (
	idPrefix  = randomPrefix()
	idCounter atomic.Uint64
)

func randomPrefix() (p [8]byte) {
	if _, err := rand.Read(p[:]); err != nil {
		panic(err)
	}
	return p
}

// NewSpanContext is a span context of fresh ids, unsampled: what names a
// request when no tracer recorded a span for it (tracing off).
func NewSpanContext() trace.SpanContext {
	n := idCounter.Add(1)
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:8], idPrefix[:])
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
}

// SpanID is the id of ctx's span when the span is sampled (hex), else "":
// what a reservation records so that its order's start, made later and
// elsewhere, continues the purchase's trace under the purchase's span.
func SpanID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		return sc.SpanID().String()
	}
	return ""
}

// WithParent returns ctx with the span a reservation recorded (traceID
// and spanID in hex) as its remote parent, so the workflow start made in
// ctx joins the purchase's trace. Without a span id (the purchase was not
// sampled) the parent is the trace id unsampled, which a parent-based
// sampler follows: an order is traced when its purchase was. ctx is
// returned as it is when it has a span already or traceID is not a trace
// id of the W3C shape (a reservation recorded before tracing).
func WithParent(ctx context.Context, traceID, spanID string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return ctx
	}
	cfg := trace.SpanContextConfig{TraceID: tid, Remote: true}
	if sid, err := trace.SpanIDFromHex(spanID); err == nil {
		cfg.SpanID, cfg.TraceFlags = sid, trace.FlagsSampled
	} else {
		// Any span id will do: the parent is not recorded anyway.
		copy(cfg.SpanID[:], tid[8:])
		cfg.SpanID[7] |= 1
	}
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(cfg))
}

// LinkTo is a link to the trace traceID names (hex), for a span that is
// about it without being part of it (a payment's webhook and the order's
// purchase); false when traceID is not of the W3C shape.
func LinkTo(traceID string) (trace.Link, bool) {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.Link{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0, 0, 0, 0, 0, 0, 0, 1}, Remote: true})
	return trace.Link{SpanContext: sc}, true
}
