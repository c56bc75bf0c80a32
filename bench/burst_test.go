package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The stack's API loads a session it has not seen from MySQL, and the
// first wave of a burst, its winners, waited for that load where the
// admission-only API's sessions are in memory: the burst reads the sale's
// page before its first order, as a shopper does before the sale opens.
func TestBurstReadsTheSessionBeforeItsFirstOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		seen = append(seen, req.Method+" "+req.URL.Path)
		mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	r := &stepRunner{cfg: Config{Users: 2, PerUser: 1, Quantity: 1, Progress: io.Discard}, c: newLoadClient(srv.URL),
		shoppers: []shopper{{index: 0}, {index: 1}}, step: &Step{SessionID: 9}}
	r.burst(context.Background(), 2, "test", false, 2)

	var orders []string
	for _, s := range seen {
		if s != "GET /healthz" {
			orders = append(orders, s)
		}
	}
	require.Equal(t, []string{"GET /api/v1/sessions/9", "POST /api/v1/sessions/9/orders", "POST /api/v1/sessions/9/orders"}, orders)
}
