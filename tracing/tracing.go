// Package tracing sets up OpenTelemetry's traces for one process, from the
// standard variables alone (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL,
// OTEL_TRACES_SAMPLER and its _ARG, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED), and holds what the
// adapters share about a trace: the ids a reservation carries to its
// workflow, and the log lines' trace_id and span_id.
//
// Without an endpoint there is no exporter and the global tracer stays
// OpenTelemetry's no-op: spans cost a context lookup, and the API still
// names every request by a trace id of the W3C shape (see Served).
package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The service names a process reports unless OTEL_SERVICE_NAME says
// otherwise: `seckill api`, `seckill worker`, and `seckill dev`, which is
// both in one process (its spans are neither fleet's).
const (
	ServiceAPI    = "seckill-api"
	ServiceWorker = "seckill-worker"
	ServiceDev    = "seckill-dev"
)

// Tracer is the tracer seckill's own spans come from (the request's, the
// order start's); the libraries' instrumentations name their own.
func Tracer() trace.Tracer { return otel.Tracer("github.com/seckill/seckill") }

// Enabled says whether the environment asks for traces: an OTLP endpoint
// is set and the SDK is not disabled.
func Enabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Start installs the process's tracer provider and the W3C propagators
// as the environment says; service is the name reported when
// OTEL_SERVICE_NAME is unset. The returned function flushes the spans
// still buffered and stops the exporter: call it on the way out. Off
// (Enabled false), it installs nothing but the propagators.
func Start(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdktrace.SpanExporter
	switch p := protocol(); p {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: seckill exports traces over grpc or http/protobuf", p)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	// The environment's resource comes last: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override the command's default name.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(service)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	// No sampler given: the SDK reads OTEL_TRACES_SAMPLER and its _ARG
	// (parentbased_always_on when unset).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

// protocol is the OTLP protocol of traces the environment names
// (http/protobuf when none, as the specification says).
func protocol() string {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return v
		}
	}
	return "http/protobuf"
}
