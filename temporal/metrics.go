package temporal

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/opentelemetry"
)

// sdkLatencyBuckets are the histogram bounds, in seconds, of the SDK's
// timers (schedule-to-start, execution, end-to-end). OpenTelemetry's
// default bounds are made for milliseconds (0, 5, 10, … 10000), which would
// put every task of a sale into the first two buckets.
var sdkLatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// MetricsHandler exports the Temporal SDK's own metrics (temporal_*:
// requests, workflow and activity task latencies, task slots, sticky cache)
// on reg, next to seckill's, through OpenTelemetry's Prometheus exporter:
// the SDK's supported bridge, since it has no native Prometheus handler.
// A metric the bridge cannot record is logged, never a panic (the
// handler's default): metrics must not take a worker down.
func MetricsHandler(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, error) {
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("temporal metrics: %w", err)
	}
	seconds := metric.NewView(
		metric.Instrument{Kind: metric.InstrumentKindHistogram, Unit: "s"},
		metric.Stream{Aggregation: metric.AggregationExplicitBucketHistogram{Boundaries: sdkLatencyBuckets}},
	)
	provider := metric.NewMeterProvider(metric.WithReader(exporter), metric.WithView(seconds))
	return opentelemetry.NewMetricsHandler(opentelemetry.MetricsHandlerOptions{
		Meter: provider.Meter("temporal-sdk-go"),
		// Counters are monotonic: exported as *_total counters that rate() reads.
		UseMonotonicCounters: true,
		OnError: func(err error) {
			log.Warn("temporal SDK metric not recorded", "error", err)
		},
	}), nil
}
