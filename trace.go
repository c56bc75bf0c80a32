package seckill

import "context"

// traceKey is the context key of a request's trace id.
type traceKey struct{}

// WithTraceID is ctx carrying the trace id of the request (or the
// purchase) it works for, so the stores' logs (a slow query) name it
// without every call passing it along.
func WithTraceID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, id)
}

// TraceIDFrom is the trace id ctx carries; "" when none.
func TraceIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(traceKey{}).(string)
	return id
}
