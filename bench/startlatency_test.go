package bench

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// Starts slower than the histogram's last bound count as that bound: a
// step whose starts timed out reports a finite p99, which JSON can hold.
func TestStartLatencyPastTheLastBound(t *testing.T) {
	body := "# TYPE " + startMetric + " histogram\n"
	serve := func(slow string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(body +
				startMetric + `_bucket{le="1"} 90` + "\n" +
				startMetric + `_bucket{le="5"} 95` + "\n" +
				startMetric + `_bucket{le="+Inf"} ` + slow + "\n" +
				startMetric + `_sum 300` + "\n" +
				startMetric + `_count ` + slow + "\n"))
		}))
	}
	before, after := serve("95"), serve("100")
	defer before.Close()
	defer after.Close()
	b, ok, err := scrapeStarts(context.Background(), before.URL)
	require.NoError(t, err)
	require.True(t, ok)
	a, _, err := scrapeStarts(context.Background(), after.URL)
	require.NoError(t, err)
	// 5 starts between the scrapes, all past the last bound.
	sl := startLatency(b, a)
	require.Equal(t, 5, sl.Starts)
	require.False(t, math.IsInf(sl.P99Ms, 0))
	require.InDelta(t, 5000, sl.P99Ms, 1e-9)
}
