package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
)

// Every error body is the request's own, whole: under concurrency no answer
// carries another request's body or the tail of a longer one. (The error
// bodies are encoded into pooled buffers; Fiber's Send keeps a reference
// to the slice until the response is written, so a buffer handed back to
// the pool too early is shared. The slow-MySQL drill saw it as 409s whose
// body was another request's SOLD_OUT with a stranger's trace id after it;
// this fails without the race detector on the code before the copy.)
func TestErrorBodiesAreTheirOwn(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	var wg sync.WaitGroup
	errs := make(chan string, 3*1500)
	for i := range 3 * 1500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Error bodies of many lengths: the route is in the message.
			path := "/api/v1/nowhere/" + strings.Repeat("x", i%97)
			resp, err := http.Get(e.BaseURL + path)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var body struct{ Code, Message, TraceID string }
			body.TraceID = "?"
			if err := json.Unmarshal(raw, &struct {
				Code    *string `json:"code"`
				Message *string `json:"message"`
				TraceID *string `json:"trace_id"`
			}{&body.Code, &body.Message, &body.TraceID}); err != nil {
				errs <- fmt.Sprintf("not JSON: %q", raw)
				return
			}
			if body.TraceID != resp.Header.Get("X-Request-ID") || !strings.HasSuffix(body.Message, path) {
				errs <- fmt.Sprintf("another request's body: %q (X-Request-ID %s, path %s)", raw, resp.Header.Get("X-Request-ID"), path)
			}
		}()
	}
	wg.Wait()
	close(errs)
	var bad []string
	for s := range errs {
		bad = append(bad, s)
	}
	require.Empty(t, bad, "%d of 4500 answers were not their own", len(bad))
}
