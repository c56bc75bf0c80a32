package temporal

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/tracing"
)

// traced adds the SDK's OpenTelemetry interceptor to opts when tracing is
// on: starts and signals carry the caller's trace context in the
// workflow's headers, and every worker made on the client (it is a worker
// interceptor too) continues it in the workflow, its activities and its
// local activities.
func traced(opts *client.Options) error {
	if !tracing.Enabled() {
		return nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return err
	}
	opts.Interceptors = append(opts.Interceptors, i)
	return nil
}

// purchaseContext is ctx under the purchase's span that req's reservation
// recorded, unless ctx has a span of its own: a start made after the
// answer (the API's starter) or much later (the relay, from the
// pending-start entry) is a step of the purchase's trace.
func purchaseContext(ctx context.Context, req *seckill.OrderRequest) context.Context {
	return tracing.WithParent(ctx, req.TraceID, req.SpanID)
}

// payStartContext is the context of a payment's signal-with-start (ctx is
// the webhook's): the workflow it may start is the purchase's, so the call
// is made in a span under the purchase's (req's reservation) that links to
// the webhook's span. The purchase then stays one trace when its payment
// came before its start, and the webhook's trace links to it both ways.
// ctx is kept when req names no purchase trace (recorded before tracing).
func payStartContext(ctx context.Context, req *seckill.OrderRequest) (context.Context, trace.Span) {
	webhook := trace.SpanContextFromContext(ctx)
	// WithParent keeps a context that has a span: the webhook's is set
	// aside first (it is the link).
	purchase := tracing.WithParent(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), req.TraceID, req.SpanID)
	if !trace.SpanContextFromContext(purchase).IsValid() {
		purchase = ctx
	}
	return tracing.Tracer().Start(purchase, "PayWithStart", trace.WithLinks(trace.Link{SpanContext: webhook}))
}
