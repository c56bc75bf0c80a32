package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/mysql"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/tracing"
)

// Tracing is how a baseline server traces (--tracing): the OTLP/HTTP
// endpoint and the sampler, as the OpenTelemetry variables say them.
type Tracing struct {
	Endpoint   string `json:"endpoint"`
	Sampler    string `json:"sampler"`
	SamplerArg string `json:"sampler_arg,omitempty"`
}

// start sets the baseline server's process up as `seckill api` is with
// these variables: its tracer, its Redis and MySQL calls traced.
func (t *Tracing) start(ctx context.Context, db *mysql.DB, rdb goredis.UniversalClient) (stop func(), err error) {
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": t.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_SAMPLER": t.Sampler, "OTEL_TRACES_SAMPLER_ARG": t.SamplerArg} {
		if err := os.Setenv(k, v); err != nil {
			return nil, err
		}
	}
	shutdown, err := tracing.Start(ctx, tracing.ServiceAPI)
	if err != nil {
		return nil, err
	}
	if err := redis.Trace(rdb); err != nil {
		return nil, err
	}
	if err := db.Trace(); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	}, nil
}

// tracedBaselines measures the admission-only burst traced, all sampled
// and 1 %, in an order that alternates with the round, into b. The spans
// go to OTEL_EXPORTER_OTLP_ENDPOINT when the bench has one (a collector,
// Jaeger), else to a sink in the bench that accepts and drops them.
func tracedBaselines(ctx context.Context, cfg Config, shoppers []shopper, level, round int, b *Baselines) error {
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" {
		url, stop, err := otlpSink()
		if err != nil {
			return err
		}
		defer stop()
		endpoint = url
	}
	runs := []struct {
		name string
		tr   *Tracing
		into **AdmissionOnly
	}{
		{"all sampled", &Tracing{Endpoint: endpoint, Sampler: "parentbased_always_on"}, &b.AdmissionOnlyTraced},
		{"1 % sampled", &Tracing{Endpoint: endpoint, Sampler: "parentbased_traceidratio", SamplerArg: "0.01"}, &b.AdmissionOnlySampled},
	}
	for i := range runs {
		r := runs[(i+round)%len(runs)]
		a, err := admissionOnlyBaseline(ctx, cfg, shoppers, level, round, "", r.tr)
		if err != nil {
			return fmt.Errorf("admission-only baseline traced, %s: %w", r.name, err)
		}
		*r.into = a
		fmt.Fprintf(cfg.Progress, "baseline: admission only traced (%s, to %s) %.0f req/s, winners' p50 %.1f ms, p99 %.1f ms\n",
			r.name, endpoint, a.RequestsPerSecond, a.AcceptedP50, a.AcceptedP99)
	}
	return nil
}

// otlpSink is an OTLP/HTTP endpoint that accepts every export and keeps
// nothing: what is measured is what tracing costs the traced process.
func otlpSink() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// medianAdmission is the median over the rounds of the admission-only
// baseline of one kind (nil when no round measured it).
func medianAdmission(bs []*Baselines, of func(*Baselines) *AdmissionOnly) *AdmissionOnly {
	var rps, p50, p99 []float64
	for _, b := range bs {
		if b == nil {
			continue
		}
		if a := of(b); a != nil {
			rps, p50, p99 = append(rps, a.RequestsPerSecond), append(p50, a.AcceptedP50), append(p99, a.AcceptedP99)
		}
	}
	if len(rps) == 0 {
		return nil
	}
	return &AdmissionOnly{RequestsPerSecond: medianOf(rps), AcceptedP50: medianOf(p50), AcceptedP99: medianOf(p99)}
}

// vsUntraced is a traced admission-only baseline's throughput against the
// untraced one's of the same round.
func vsUntraced(traced func(*Baselines) *AdmissionOnly) func(Step, *Baselines) (float64, bool) {
	return func(_ Step, b *Baselines) (float64, bool) {
		t := traced(b)
		if b.AdmissionOnly == nil || t == nil {
			return 0, false
		}
		return div(t.RequestsPerSecond, b.AdmissionOnly.RequestsPerSecond)
	}
}
