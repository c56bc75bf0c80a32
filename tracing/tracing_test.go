package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/tracing"
)

// Without an endpoint tracing is off: nothing installed but the W3C
// propagators. An unknown protocol is refused by name.
func TestStartFromTheEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	before := otel.GetTracerProvider()
	stop, err := tracing.Start(context.Background(), tracing.ServiceAPI)
	require.NoError(t, err)
	require.NoError(t, stop(context.Background()))
	require.False(t, tracing.Enabled())
	require.Equal(t, before, otel.GetTracerProvider(), "no SDK provider when off")
	require.Contains(t, otel.GetTextMapPropagator().Fields(), "traceparent")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	require.False(t, tracing.Enabled())
	t.Setenv("OTEL_SDK_DISABLED", "")
	require.True(t, tracing.Enabled())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err = tracing.Start(context.Background(), tracing.ServiceAPI)
	require.ErrorContains(t, err, "grpc or http/protobuf")
}

// A reservation's ids make the parent of its workflow's start: the
// purchase's span when it was sampled, its trace unsampled otherwise; a
// context with a span of its own, or an id of another shape, is left alone.
func TestWithParent(t *testing.T) {
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	bg := context.Background()
	sc := trace.SpanContextFromContext(tracing.WithParent(bg, tid, sid))
	require.Equal(t, tid, sc.TraceID().String())
	require.Equal(t, sid, sc.SpanID().String())
	require.True(t, sc.IsSampled())
	require.True(t, sc.IsRemote())

	sc = trace.SpanContextFromContext(tracing.WithParent(bg, tid, ""))
	require.Equal(t, tid, sc.TraceID().String())
	require.True(t, sc.IsValid())
	require.False(t, sc.IsSampled(), "an unsampled purchase's order is not sampled either")

	require.False(t, trace.SpanContextFromContext(tracing.WithParent(bg, "keepalive-1", sid)).IsValid())
	own := trace.ContextWithSpanContext(bg, tracing.NewSpanContext())
	require.Equal(t, own, tracing.WithParent(own, tid, sid))

	ctx := trace.ContextWithSpanContext(bg, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled}))
	require.Equal(t, trace.SpanID{2}.String(), tracing.SpanID(ctx))
	require.Empty(t, tracing.SpanID(own), "an unsampled span is not recorded for the start")
}
