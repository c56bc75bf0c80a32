package api_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// /metrics serves the seckill_* collectors in the Prometheus text format:
// HTTP answers by route pattern, the admission funnel by layer and outcome,
// the Redis and workflow-start latencies.
func TestMetrics(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 100)
	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(1), nil)
	require.Equal(t, http.StatusAccepted, r.Status)
	e.WaitStatus(e.Token(1), r.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	// The win took the last unit: the process flags the session sold out.
	require.Equal(t, 409, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(2), nil).Status)
	require.Equal(t, 409, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(3), nil).Status)
	open := e.Session(5, 1, 100)
	require.Equal(t, 401, e.Do("POST", testenv.OrdersPath(open.ID), "", nil).Status) // auth, before any stock logic

	m := e.Do("GET", "/metrics", "", nil)
	require.Equal(t, 200, m.Status)
	text := string(m.Raw)
	for _, want := range []string{
		`seckill_admission_total{layer="redis",outcome="accepted"} 1`,
		`seckill_admission_total{layer="soldout_memory",outcome="SOLD_OUT"} 2`,
		`seckill_admission_total{layer="auth",outcome="UNAUTHENTICATED"} 1`,
		`seckill_http_requests_total{method="POST",route="/api/v1/sessions/:id/orders",status="202"} 1`,
		`seckill_http_requests_total{method="POST",route="/api/v1/sessions/:id/orders",status="409"} 2`,
		`seckill_redis_admit_duration_seconds_count 1`,
		`seckill_workflow_start_duration_seconds_count 1`,
		`seckill_workflow_start_failures_total{kind="timeout"} 0`,
		`seckill_starter_limit{starter="api"}`,
		`seckill_starter_queue{starter="api"} 0`,
		`go_goroutines`,
	} {
		require.True(t, strings.Contains(text, want), "missing %q in:\n%s", want, grepSeckill(text))
	}
	require.NotContains(t, text, fmt.Sprintf("/api/v1/sessions/%d", sess.ID), "raw paths must not become labels")
	e.RequireInvariants(sess.ID)
	e.RequireInvariants(open.ID)
}

func grepSeckill(text string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "seckill_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The HTTP latency histogram links its buckets to requests: scraped in
// OpenMetrics (as Prometheus asks), a bucket carries the trace id of a
// request it counted as an exemplar; the plain text format has none.
func TestLatencyExemplars(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(1, 1, 100)
	r := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), "", nil)
	require.Equal(t, 200, r.Status)
	trace := r.Header.Get("X-Request-ID")

	req, err := http.NewRequest("GET", e.BaseURL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/openmetrics-text")
	var found bool
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, `seckill_http_request_duration_seconds_bucket{route="/api/v1/sessions/:id"`) &&
			strings.Contains(l, `# {trace_id="`+trace+`"}`) {
			found = true
		}
	}
	require.True(t, found, "no exemplar with the request's trace id in:\n%s", grepSeckill(string(body)))

	require.NotContains(t, string(e.Do("GET", "/metrics", "", nil).Raw), "trace_id=", "the text format carries no exemplars")
}
