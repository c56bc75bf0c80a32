package api_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
)

// delayedStarts delays every workflow start, so
// the start runs after the handler returned, while the connection already
// carries the next request.
type delayedStarts struct {
	app.APIFlow
	delay time.Duration
	mu    sync.Mutex
	seen  map[string]string // order number → trace id the start was given
}

func (f *delayedStarts) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	time.Sleep(f.delay)
	f.mu.Lock()
	f.seen[req.OrderNo] = req.TraceID
	f.mu.Unlock()
	return f.APIFlow.Start(ctx, req)
}

// Fasthttp reuses a connection's request memory for its next request: a
// trace id that is only a view into it would, once the handler returned,
// read as the next request's. Requests on one keep-alive connection, with
// workflow starts slower than the handler, must each leave exactly their
// own trace id (the answer's X-Request-ID) in the workflow input, the
// ledger, the TraceID search attribute and the log.
func TestRequestIDOutlivesTheRequest(t *testing.T) {
	const n = 12
	slow := &delayedStarts{delay: 300 * time.Millisecond, seen: map[string]string{}}
	logs := &testenv.LogBuffer{}
	e := testenv.New(t, testenv.Options{

		WrapFlow: func(f app.APIFlow) app.APIFlow { slow.APIFlow = f; return slow },
		Logger:   slog.New(slog.NewJSONHandler(logs, nil)),
	})
	sess := e.Session(n, 1, 100)
	// One connection: every request reuses the same server-side buffers.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	type sent struct {
		user  int64
		trace string
	}
	want := map[string]sent{} // order number → its request
	for i := 0; i < n; i++ {
		user := int64(100 + i)
		req, err := http.NewRequest("POST", e.BaseURL+testenv.OrdersPath(sess.ID), nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+e.Token(user))
		resp, err := client.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", raw)
		trace := resp.Header.Get("X-Request-ID")
		require.Regexp(t, "^[0-9a-f]{32}$", trace)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body))
		want[body["order_no"].(string)] = sent{user, trace}
	}

	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for no, s := range want {
		e.WaitStatus(e.Token(s.user), no, 30*time.Second, seckill.StatusWaitPay)
		slow.mu.Lock()
		started := slow.seen[no]
		slow.mu.Unlock()
		require.Equal(t, s.trace, started, "workflow input of %s", no)

		rows, err := db.QueryContext(ctx, "SELECT trace_id FROM order_ledger WHERE order_no = ?", no)
		require.NoError(t, err)
		var traces []string
		for rows.Next() {
			var tr string
			require.NoError(t, rows.Scan(&tr))
			traces = append(traces, tr)
		}
		require.NoError(t, rows.Close())
		require.NotEmpty(t, traces, "ledger rows of %s", no)
		for _, tr := range traces {
			require.Equal(t, s.trace, tr, "ledger row of %s", no)
		}

		d, err := e.Temporal.DescribeWorkflowExecution(ctx, temporal.WorkflowID(no), "")
		require.NoError(t, err)
		sa := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()
		require.Equal(t, `"`+s.trace+`"`, string(sa["TraceID"].GetData()), "TraceID search attribute of %s", no)
	}
	accepted := 0
	for _, l := range logs.Lines() {
		no, _ := l["order_no"].(string)
		s, ok := want[no]
		if !ok {
			continue
		}
		require.Equal(t, s.trace, l["trace_id"], "log line %v", l)
		if l["msg"] == "order accepted" {
			accepted++
		}
	}
	require.Equal(t, n, accepted)
	e.RequireInvariants(sess.ID)
}
