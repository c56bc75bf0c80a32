package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// A shop on its own origin, listed in SECKILL_CORS_ORIGINS, may call the
// shopper routes from the browser with its credentials: the preflight says
// what it may send. Any other origin gets no CORS header at all, and the
// admin routes answer no origin, listed or not.
func TestCORS(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, Configure: func(c *app.Config) {
		c.CORSOrigins = "https://shop.example.com, https://Second.Example:8443"
	}})
	sess := e.Session(5, 1, 100)
	orders := testenv.OrdersPath(sess.ID)
	preflight := func(path, origin string) *testenv.Response {
		return e.Do(http.MethodOptions, path, "", nil, "Origin", origin,
			"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, idempotency-key, content-type")
	}

	for _, origin := range []string{"https://shop.example.com", "https://second.example:8443"} {
		r := preflight(orders, origin)
		require.Equal(t, http.StatusNoContent, r.Status, "%s", r.Raw)
		require.Equal(t, origin, r.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", r.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, r.Header.Get("Access-Control-Allow-Methods"), "POST")
		for _, h := range []string{"Authorization", "Idempotency-Key", "Content-Type"} {
			require.Contains(t, r.Header.Get("Access-Control-Allow-Headers"), h)
		}
		require.Contains(t, strings.Join(r.Header.Values("Vary"), ","), "Origin")

		got := e.Do(http.MethodGet, "/api/v1/sessions/"+itoa(sess.ID), "", nil, "Origin", origin)
		require.Equal(t, 200, got.Status, "%s", got.Raw)
		require.Equal(t, origin, got.Header.Get("Access-Control-Allow-Origin"))
		require.Equal(t, "true", got.Header.Get("Access-Control-Allow-Credentials"))
		require.Contains(t, strings.Join(got.Header.Values("Vary"), ","), "Origin")
	}

	noCORS := func(r *testenv.Response) {
		t.Helper()
		for k := range r.Header {
			require.False(t, strings.HasPrefix(k, "Access-Control-"), "header %s: %v", k, r.Header)
		}
	}
	for _, origin := range []string{"https://evil.example", "https://shop.example.com.evil.example", "http://shop.example.com", "null"} {
		noCORS(preflight(orders, origin))
		got := e.Do(http.MethodGet, "/api/v1/sessions/"+itoa(sess.ID), "", nil, "Origin", origin)
		require.Equal(t, 200, got.Status)
		noCORS(got)
	}
	for _, path := range []string{"/admin/v1/orders", "/admin/v1/sessions"} {
		noCORS(preflight(path, "https://shop.example.com"))
		noCORS(e.Do(http.MethodGet, path, testenv.AdminToken, nil, "Origin", "https://shop.example.com"))
	}
	e.RequireInvariants(sess.ID)
}

// Without SECKILL_CORS_ORIGINS the API is same-origin only: no origin
// gets a CORS header.
func TestNoCORSByDefault(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	r := e.Do(http.MethodOptions, "/api/v1/sessions", "", nil, "Origin", "https://shop.example.com", "Access-Control-Request-Method", "GET")
	for k := range r.Header {
		require.False(t, strings.HasPrefix(k, "Access-Control-"), "header %s", k)
	}
}
