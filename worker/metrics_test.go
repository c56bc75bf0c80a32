package worker_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// The worker serves /metrics, /healthz and /readyz on
// SECKILL_WORKER_HTTP_ADDR: the relay backlog while starts are missing,
// the relay's actions, then the sale as reconcile sees it (stock in both
// stores, orders by status, drift) and the Temporal SDK's own metrics.
// The worker runs as the real binary, as it is deployed.
func TestWorkerMetrics(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true,
		WrapFlow: testenv.LoseStarts}) // the relay gets a backlog to show and work off
	addr := freeAddr(t)
	e.Spawn(e.ProcessEnv("SECKILL_WORKER_HTTP_ADDR="+addr, "SECKILL_OBSERVE_EVERY=200ms", "SECKILL_RELAY_MIN_AGE=2s"), "worker")
	base := "http://" + addr
	e.Eventually(30*time.Second, "worker ready", func() error {
		if code := get(base + "/readyz"); code != http.StatusOK {
			return fmt.Errorf("readyz %d", code)
		}
		return nil
	})
	require.Equal(t, http.StatusOK, get(base+"/healthz"))

	// A sale that ended two hours ago, still preheated: past the observer's
	// tail, it is left to the scheduled reconcile and has no sale series.
	old := &seckill.Session{SKUID: 7, Title: "last week", PriceCents: 100, TotalStock: 3, PerUserLimit: 1,
		StartAt: time.Now().Add(-3 * time.Hour), EndAt: time.Now().Add(-2 * time.Hour)}
	require.NoError(t, e.DB.CreateSession(context.Background(), old, nil))
	_, err := e.Gate.Preheat(context.Background(), old.ID, 3)
	require.NoError(t, err)

	sess := e.Session(5, 1, 100)
	id := fmt.Sprint(sess.ID)
	var orders []string
	for u := int64(1); u <= 3; u++ {
		r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(u), nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		orders = append(orders, r.Str("order_no"))
	}

	// Every start was lost: the backlog shows until the relay takes it
	// (it leaves entries younger than a few seconds to the API).
	e.Eventually(5*time.Second, "backlog visible", func() error {
		return expect(base, sample{"seckill_relay_backlog", map[string]string{"queue": "starts"}, 3})
	})
	for i, no := range orders {
		e.WaitStatus(e.Token(int64(i+1)), no, 30*time.Second, seckill.StatusWaitPay)
	}
	e.Eventually(10*time.Second, "sale series", func() error {
		return expect(base,
			sample{"seckill_relay_backlog", map[string]string{"queue": "starts"}, 0},
			sample{"seckill_relay_actions_total", map[string]string{"queue": "starts", "action": "started"}, 3},
			sample{"seckill_orders", map[string]string{"session_id": id, "status": "WAIT_PAY"}, 3},
			sample{"seckill_orders", map[string]string{"session_id": id, "status": "PAID"}, 0},
			sample{"seckill_stock", map[string]string{"session_id": id, "store": "db"}, 2},
			sample{"seckill_stock", map[string]string{"session_id": id, "store": "redis"}, 2},
			sample{"seckill_reconcile_drift", map[string]string{"session_id": id}, 0},
			sample{"seckill_reconcile_problems", map[string]string{"session_id": id}, 0},
			sample{"seckill_reconcile_in_flight", map[string]string{"session_id": id}, 0},
			sample{"seckill_refunds", map[string]string{"state": "parked"}, 0},
			sample{"seckill_build_info", map[string]string{"go_version": runtime.Version()}, 1},
		)
	})
	families, err := scrape(base)
	require.NoError(t, err)
	require.Positive(t, value(families["seckill_reconcile_runs_total"], map[string]string{"result": "ok"}))
	require.Equal(t, -1.0, value(families["seckill_stock"], map[string]string{"session_id": fmt.Sprint(old.ID)}),
		"a session that ended long ago is not observed")
	var sdk []string
	for name := range families {
		if strings.HasPrefix(name, "temporal_") {
			sdk = append(sdk, name)
		}
	}
	require.Contains(t, sdk, "temporal_request_total", "the Temporal SDK's metrics are exported: %v", sdk)
	require.Contains(t, sdk, "temporal_workflow_task_execution_latency_seconds", "%v", sdk)
	e.RequireInvariants(sess.ID)
}

type sample struct {
	name   string
	labels map[string]string
	want   float64
}

// expect scrapes once and checks every sample.
func expect(base string, samples ...sample) error {
	families, err := scrape(base)
	if err != nil {
		return err
	}
	for _, s := range samples {
		if got := value(families[s.name], s.labels); got != s.want {
			return fmt.Errorf("%s%v = %v, want %v", s.name, s.labels, got, s.want)
		}
	}
	return nil
}

func scrape(base string) (map[string]*dto.MetricFamily, error) {
	res, err := http.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(res.Body)
}

// value is the sample of f whose labels include want; -1 when absent.
func value(f *dto.MetricFamily, want map[string]string) float64 {
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

func get(url string) int {
	res, err := http.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// freeAddr is a loopback address nothing listens on (the worker binds it).
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
