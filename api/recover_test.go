package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// panicky is a Store with a bug: looking up session 666 panics, with a
// value that must not pass for a business answer.
type panicky struct{ app.APIStore }

func (p panicky) Session(ctx context.Context, id int64) (*seckill.Session, int, error) {
	if id == 666 {
		panic(seckill.Errorf(seckill.ENOTFOUND, "a bug, not an answer"))
	}
	return p.APIStore.Session(ctx, id)
}

// A panic in a handler answers 500 INTERNAL in the error shape, logs the
// stack with the trace id, and the process goes on serving.
func TestPanicAnswers500AndKeepsServing(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	var logs testenv.LogBuffer
	srv := newServer(t, e, app.APIConfig{Config: api.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}}, panicky{e.DB})
	serve(t, e, srv)

	r := e.Do("GET", "/api/v1/sessions/666", "", nil)
	testenv.RequireError(t, r, http.StatusInternalServerError, seckill.EINTERNAL, "internal error")
	trace := r.Header.Get("X-Request-ID")
	require.NotContains(t, string(r.Raw), "a bug", "the panic value never reaches the client")
	out := logs.String()
	require.Contains(t, out, `"msg":"panic in handler"`)
	require.Contains(t, out, `"trace_id":"`+trace+`"`)
	require.Contains(t, out, "recover_test.go", "the stack is logged")

	// Concurrent panics of one shared lookup: every caller gets its 500.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, http.StatusInternalServerError, e.Do("GET", "/api/v1/sessions/666", "", nil).Status)
		}()
	}
	wg.Wait()

	ok := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), "", nil)
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Raw)
	require.Equal(t, http.StatusOK, e.Do("GET", "/healthz", "", nil).Status)
}
