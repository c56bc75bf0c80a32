package worker_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// One trace id follows a purchase through the worker's JSON logs: the
// workflow's status changes, the payment it received (with the webhook's
// own trace id next to it) and the compensation of a cancelled order carry
// the trace id the shopper's request got at the edge (the answer's
// X-Request-ID). Ops grep one id.
func TestWorkerLogsFollowOnePurchase(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	w := e.Spawn(e.ProcessEnv("SECKILL_LOG_LEVEL=INFO"), "worker")
	sess := e.Session(5, 1, 250)

	buy := func(user int64) (no, trace string) {
		r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(user), nil)
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		return r.Str("order_no"), r.Header.Get("X-Request-ID")
	}
	waitFor := func(user int64, no string, want seckill.Status) {
		e.WaitStatus(e.Token(user), no, 30*time.Second, want)
	}
	suffix := e.Prefix // unique per test run
	paid, paidTrace := buy(1)
	cancelled, cancelTrace := buy(2)
	waitFor(1, paid, seckill.StatusWaitPay)
	waitFor(2, cancelled, seckill.StatusWaitPay)
	require.Equal(t, http.StatusOK, e.Pay(paid, "pay-"+suffix, "evt-"+suffix, 250).Status)
	require.Equal(t, http.StatusAccepted, e.Do("POST", "/api/v1/orders/"+cancelled+"/cancel", e.Token(2), nil).Status)
	waitFor(1, paid, seckill.StatusPaid)
	waitFor(2, cancelled, seckill.StatusClosed)

	e.Eventually(10*time.Second, "log lines of both purchases", func() error {
		lines := logLines(w.Output())
		for _, want := range []struct{ trace, msg, key, value string }{
			{paidTrace, "order status", "to", "WAIT_PAY"},
			{paidTrace, "payment received", "payment_id", "pay-" + suffix},
			{paidTrace, "order status", "to", "PAID"},
			{cancelTrace, "order status", "to", "CLOSED"},
			{cancelTrace, "stock given back", "reason", "cancelled"},
		} {
			if !hasLine(lines, want.trace, want.msg, want.key, want.value) {
				return fmt.Errorf("no %q line with %s=%s for trace %s", want.msg, want.key, want.value, want.trace)
			}
		}
		return nil
	})
	for _, l := range logLines(w.Output()) {
		if l["trace_id"] == paidTrace {
			require.Equal(t, paid, l["order_no"], "a line with the trace id names its order: %v", l)
		}
	}
	e.RequireInvariants(sess.ID)
}

func logLines(out string) []map[string]any {
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			lines = append(lines, m)
		}
	}
	return lines
}

func hasLine(lines []map[string]any, trace, msg, key, value string) bool {
	for _, l := range lines {
		if l["trace_id"] == trace && l["msg"] == msg && fmt.Sprint(l[key]) == value {
			return true
		}
	}
	return false
}
