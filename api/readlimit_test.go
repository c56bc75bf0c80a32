package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// The public reads (the session list, one session, order polling) have a
// per-IP limit: 429 RATE_LIMITED with Retry-After in the error shape, before
// any other work (even the token check of a poll). Admission keeps its own
// limits, and 0 turns the read limit off (testenv's default: every test's
// load comes from one address).
func TestPublicReadsAreRateLimited(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{Read: 3}})
	sess := e.Session(5, 1, 100)
	tok := e.Token(1)
	one := fmt.Sprintf("/api/v1/sessions/%d", sess.ID)

	// Back to back: the bucket holds one second of requests.
	require.Equal(t, http.StatusOK, e.Do("GET", one, "", nil).Status)
	require.Equal(t, http.StatusOK, e.Do("GET", "/api/v1/sessions", "", nil).Status)
	require.Equal(t, http.StatusNotFound, e.Do("GET", "/api/v1/orders/1-abc", tok, nil).Status)
	for _, path := range []string{one, "/api/v1/sessions", "/api/v1/orders/1-abc"} {
		r := e.Do("GET", path, "", nil)
		testenv.RequireError(t, r, http.StatusTooManyRequests, seckill.ERATELIMITED, "too many requests")
		secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, secs, 1)
	}
	// Admission is not a read: it answers for itself (here: no such session).
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(424242), tok, nil), http.StatusNotFound, seckill.ENOTFOUND, "not found")
	require.LessOrEqual(t, api.ReadBucketsForTest(e.API.Server), 1, "one address, one bucket")

	off := testenv.New(t, testenv.Options{NoWorker: true})
	for i := 0; i < 50; i++ {
		require.Equal(t, http.StatusOK, off.Do("GET", "/api/v1/sessions", "", nil).Status)
	}
	require.Zero(t, api.ReadBucketsForTest(off.API.Server))
}
