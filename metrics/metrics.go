// Package metrics holds seckill's Prometheus collectors (all named
// seckill_*), registered on one registry with the Go and process
// collectors, and the handler that serves them on /metrics.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the collectors of one process.
type Metrics struct {
	Registry *prometheus.Registry

	// HTTPRequests counts answers by route pattern, method and status.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration is the handling time by route pattern.
	HTTPDuration *prometheus.HistogramVec
	// Admissions counts admission answers by the layer that decided them
	// and their outcome (accepted or the error code): the funnel.
	Admissions *prometheus.CounterVec
	// RedisAdmit is the latency of the admission script call.
	RedisAdmit prometheus.Histogram
	// WorkflowStart is the latency of StartWorkflow from the API;
	// WorkflowStartFailures counts starts left to the relay.
	WorkflowStart         prometheus.Histogram
	WorkflowStartFailures prometheus.Counter
}

// New registers every collector on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total", Help: "HTTP answers by route, method and status.",
		}, []string{"route", "method", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_http_request_duration_seconds", Help: "HTTP handling time by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_admission_total", Help: "Admission answers by the layer that decided and the outcome (the funnel).",
		}, []string{"layer", "outcome"}),
		RedisAdmit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_redis_admit_duration_seconds", Help: "Latency of the admission script call (coalesced batches included).",
			Buckets: []float64{.0002, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		}),
		WorkflowStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "seckill_workflow_start_duration_seconds", Help: "Latency of StartWorkflow from the API.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		WorkflowStartFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_workflow_start_failures_total", Help: "Workflow starts that failed in the API and are left to the relay.",
		}),
	}
	m.Registry.MustRegister(m.HTTPRequests, m.HTTPDuration, m.Admissions, m.RedisAdmit, m.WorkflowStart,
		m.WorkflowStartFailures, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// Since returns the seconds elapsed since t, for Observe.
func Since(t time.Time) float64 { return time.Since(t).Seconds() }
