package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// jaegerTrace is a trace as Jaeger's query API answers it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		ProcessID     string `json:"processID"`
		References    []struct {
			TraceID string `json:"traceID"`
		} `json:"references"`
		Tags []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// startJaeger runs bin/jaeger (make jaeger) on loopback ports of its own,
// its memory store, OTLP over HTTP and the query API, with Jaeger's UI when
// JAEGER_UI_ASSETS names a build of it; it returns the OTLP endpoint and
// the query API's base URL. Fails when bin/jaeger was not built (make test
// builds it).
func startJaeger(t *testing.T) (otlp, query string) {
	bin, err := filepath.Abs("../../bin/jaeger")
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("bin/jaeger is not built: make jaeger (make test builds it)")
	}
	otlpAddr, queryAddr, queryGRPC := testenv.FreeAddr(t), testenv.FreeAddr(t), testenv.FreeAddr(t)
	ui := ""
	if dir := os.Getenv("JAEGER_UI_ASSETS"); dir != "" {
		ui = fmt.Sprintf("\n    ui:\n      assets_path: %q", dir)
	}
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    traces:
      level: none
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s%s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, queryAddr, queryGRPC, ui, otlpAddr)), 0o600))
	log, err := os.Create(filepath.Join(t.TempDir(), "jaeger.log"))
	require.NoError(t, err)
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("jaeger's log:\n%s", b)
		}
	})
	query = "http://" + queryAddr
	require.Eventually(t, func() bool {
		resp, err := http.Get(query + "/api/services")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "jaeger's query API")
	return "http://" + otlpAddr, query
}

// One purchase is one trace, from the click to the MySQL row: with every
// process pointed at a real Jaeger, the trace the answer's X-Request-ID
// names has the API's purchase span, the workflow's start, the worker's
// OrderWorkflow and its steps, MySQL's statements and Redis's commands,
// under the services seckill-api and seckill-worker. Found as an operator
// would: among seckill-api's purchases in Jaeger's query API
// (/api/traces?service=seckill-api&operation=…), the one with that id. The
// worker's log line of the payment joins it: its trace_id, and the span_id
// of the step that logged it. A purchase paid before its start is one trace
// too (payBeforeStart).
func TestOnePurchaseIsOneTrace(t *testing.T) {
	testenv.SkipShort(t, "MariaDB, Redis, Temporal and Jaeger")
	otlp, query := startJaeger(t)
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	// Not eager: the API hosts no worker, so the workflow's steps are the
	// worker process's.
	env := e.ProcessEnv("OTEL_EXPORTER_OTLP_ENDPOINT="+otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_BSP_SCHEDULE_DELAY=100", "SECKILL_EAGER_START=false", "SECKILL_LOG_LEVEL=INFO",
		// payBeforeStart: the relay must not start what the held API cannot.
		"SECKILL_RELAY_MIN_AGE=10m")
	worker := e.Spawn(env, "worker")
	_, base := e.SpawnAPI(env)
	e.BaseURL = base

	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(3), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	traceID, orderNo := r.Header.Get("X-Request-ID"), r.Str("order_no")
	e.WaitStatus(e.Token(3), orderNo, 60*time.Second, seckill.StatusWaitPay)
	// Paid, the workflow ends: its RunWorkflow span ends and is exported.
	require.Equal(t, http.StatusOK, e.Pay(orderNo, "pay-"+orderNo, "evt-"+orderNo, 100).Status)
	e.WaitStatus(e.Token(3), orderNo, 60*time.Second, seckill.StatusPaid)

	want := []string{
		"seckill-api: POST /api/v1/sessions/:id/orders",
		"seckill-api: StartWorkflow:OrderWorkflow",
		"seckill-worker: RunWorkflow:OrderWorkflow",
		"seckill-worker: RunActivity:CreateOrder",
		"seckill-worker: RunActivity:ApplyPayment",
		"seckill-worker: mysql INSERT",
		"seckill-api: redis",
		"seckill-worker: redis",
	}
	var spans map[string]bool
	e.Eventually(60*time.Second, "the purchase's trace in Jaeger", func() (err error) {
		spans, err = purchaseTrace(query, traceID, orderNo, want)
		return err
	})

	var logged struct {
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	}
	for _, line := range strings.Split(worker.Output(), "\n") {
		if strings.Contains(line, `"msg":"payment applied"`) {
			require.NoError(t, json.Unmarshal([]byte(line), &logged), line)
		}
	}
	require.Equal(t, traceID, logged.TraceID, "the worker's log line of the payment names the purchase's trace")
	require.True(t, spans[logged.SpanID], "its span_id %q is a span of the trace (logs and traces join)", logged.SpanID)

	payBeforeStart(t, e, env, query)

	if os.Getenv("JAEGER_UI_ASSETS") == "" {
		t.Log("JAEGER_UI_ASSETS unset: bin/jaeger has no UI of its own, the trace's page is not opened (docs/OPERATIONS.md)")
		return
	}
	screenshotTrace(t, query, traceID, os.Getenv("TRACE_SCREENSHOT"))
}

// screenshotTrace opens a trace's page in Jaeger's UI in headless
// Chromium, waits until it shows the purchase's spans from the click to
// the row, and writes a PNG of it to file (when file is not empty): the
// screenshot of docs/OPERATIONS.md.
func screenshotTrace(t *testing.T, query, traceID, file string) {
	ctx := testenv.Chromium(t, 1440, 1000)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	shown := `(() => { const s = document.body.innerText;
		return ["POST /api/v1/sessions/:id/orders", "RunWorkflow:OrderWorkflow", "RunActivity:CreateOrder", "INSERT orders"]
			.every(n => s.includes(n)) && s.includes("seckill-worker"); })()`
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(query+"/trace/"+traceID),
		chromedp.Poll[chromedp.Void](shown, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(50*time.Second))),
		"Jaeger's UI shows trace %s with the API's and the worker's spans", traceID)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG")
	if file != "" {
		require.NoError(t, os.WriteFile(file, png, 0o644))
		t.Logf("the trace's page: %s", file)
	}
}

// payBeforeStart: a payment that arrives before its order's workflow has
// started (the API that admitted it cannot reach Temporal; the worker's
// relay waits its minimum age) starts the workflow from the webhook, in the
// purchase's trace: the purchase is still one trace, with the webhook's
// signal-with-start (PayWithStart, linked to the webhook's trace) and the
// workflow's steps, and the webhook's trace links back to it.
func payBeforeStart(t *testing.T, e *testenv.Env, env []string, query string) {
	sess := e.Session(5, 1, 100)
	cut := testenv.StartToxi(t, "held-temporal", e.TemporalAddr)
	_, held := e.SpawnAPI(append(env, "TEMPORAL_ADDRESS="+cut.Addr))
	cut.SetDown(true)
	payer := e.BaseURL
	e.BaseURL = held
	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(4), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	traceID, orderNo := r.Header.Get("X-Request-ID"), r.Str("order_no")
	require.Equal(t, seckill.StatusQueued, seckill.Status(e.Do("GET", "/api/v1/orders/"+orderNo, e.Token(4), nil).Str("status")),
		"no workflow yet: its API cannot start it")
	e.BaseURL = payer
	paid := e.Pay(orderNo, "pay-"+orderNo, "evt-"+orderNo, 100)
	require.Equal(t, http.StatusOK, paid.Status, "%s", paid.Raw)
	e.WaitStatus(e.Token(4), orderNo, 60*time.Second, seckill.StatusPaid)

	want := []string{
		"seckill-api: POST /api/v1/sessions/:id/orders",
		"seckill-api: PayWithStart",
		"seckill-api: SignalWithStartWorkflow:OrderWorkflow",
		"seckill-worker: RunWorkflow:OrderWorkflow",
		"seckill-worker: RunActivity:CreateOrder",
		"seckill-worker: RunActivity:ApplyPayment",
		"seckill-worker: mysql INSERT",
	}
	webhook := paid.Header.Get("X-Request-ID")
	e.Eventually(60*time.Second, "the purchase paid before its start, one trace in Jaeger", func() error {
		tr, err := jaegerTraceByID(query, traceID)
		if err != nil {
			return err
		}
		if err := hasSpans(tr, orderNo, want); err != nil {
			return err
		}
		if !refersTo(tr, "PayWithStart", webhook) {
			return fmt.Errorf("PayWithStart of trace %s links to no webhook trace %s", traceID, webhook)
		}
		wt, err := jaegerTraceByID(query, webhook)
		if err != nil {
			return err
		}
		if !refersTo(wt, "POST /api/v1/payments/webhook", traceID) {
			return fmt.Errorf("the webhook's trace %s links to no purchase trace %s", webhook, traceID)
		}
		return nil
	})
	e.RequireInvariants(sess.ID)
}

// purchaseTrace finds a purchase's trace as an operator would: among
// seckill-api's purchases in Jaeger's query API, the one with traceID; it
// must have every span of want (hasSpans). It returns the trace's span ids.
func purchaseTrace(query, traceID, orderNo string, want []string) (map[string]bool, error) {
	traces, err := jaegerTraces(query + "/api/traces?service=seckill-api&lookback=1h&limit=20&operation=" +
		url.QueryEscape("POST /api/v1/sessions/:id/orders"))
	if err != nil {
		return nil, err
	}
	for _, tr := range traces {
		if tr.TraceID != traceID {
			continue
		}
		if err := hasSpans(&tr, orderNo, want); err != nil {
			return nil, err
		}
		ids := map[string]bool{}
		for _, s := range tr.Spans {
			ids[s.SpanID] = true
		}
		return ids, nil
	}
	return nil, fmt.Errorf("no trace %s among seckill-api's %d purchases", traceID, len(traces))
}

// jaegerTraceByID is the trace traceID from Jaeger's query API.
func jaegerTraceByID(query, traceID string) (*jaegerTrace, error) {
	traces, err := jaegerTraces(query + "/api/traces/" + traceID)
	if err != nil {
		return nil, err
	}
	if len(traces) == 0 {
		return nil, fmt.Errorf("no trace %s in Jaeger yet", traceID)
	}
	return &traces[0], nil
}

// jaegerTraces are the traces a call of Jaeger's query API answers.
func jaegerTraces(u string) ([]jaegerTrace, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	return body.Data, err
}

// hasSpans checks tr has a span of each of want ("service: operation";
// "service: mysql INSERT" and "service: redis" for any such statement or
// command), and one that names orderNo and its verdict.
func hasSpans(tr *jaegerTrace, orderNo string, want []string) error {
	seen := map[string]bool{}
	var orderTagged bool
	for _, s := range tr.Spans {
		svc := tr.Processes[s.ProcessID].ServiceName
		seen[svc+": "+s.OperationName] = true
		tags := map[string]any{}
		for _, tag := range s.Tags {
			tags[tag.Key] = tag.Value
		}
		if tags["db.system.name"] == "mysql" && strings.HasPrefix(s.OperationName, "INSERT") {
			seen[svc+": mysql INSERT"] = true
		}
		if tags["db.system"] == "redis" {
			seen[svc+": redis"] = true
		}
		if tags["seckill.order_no"] == orderNo && tags["seckill.admission.verdict"] == "ACCEPTED" {
			orderTagged = true
		}
	}
	for _, w := range want {
		if !seen[w] {
			return fmt.Errorf("trace %s has no span %q yet (has %v)", tr.TraceID, w, seen)
		}
	}
	if !orderTagged {
		return fmt.Errorf("no span of trace %s names order %s and its verdict", tr.TraceID, orderNo)
	}
	return nil
}

// refersTo reports whether a span of tr named operation refers (links) to
// the trace other.
func refersTo(tr *jaegerTrace, operation, other string) bool {
	for _, s := range tr.Spans {
		if s.OperationName != operation {
			continue
		}
		for _, r := range s.References {
			if r.TraceID == other {
				return true
			}
		}
	}
	return false
}
