package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal/starter"
)

// Through the real app: a client that is not a trusted proxy cannot choose
// its address by sending X-Forwarded-For, so it cannot escape a per-IP limit;
// a trusted proxy's header does name the client. (app.Test's peer is 0.0.0.0.)
func TestProxyHeaderFromUntrustedPeerIsIgnored(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	get := func(srv *api.Server, xff string) int {
		req := httptest.NewRequest("GET", fmt.Sprintf("/api/v1/sessions/%d", sess.ID), nil)
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := srv.App().Test(req, 5000)
		require.NoError(t, err)
		return resp.StatusCode
	}
	build := func(trusted string) *api.Server {
		prefixes, err := clientip.ParseProxies(trusted)
		require.NoError(t, err)
		srv, err := app.NewAPI(app.APIConfig{AdminToken: testenv.AdminToken, Config: api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
			Logger:      e.Log,
			ProxyHeader: "X-Forwarded-For", TrustedProxies: prefixes}, Limits: app.Limits{Read: 1}}, starter.Config{}, e.DB, e.Gate, e.Orders)
		require.NoError(t, err)
		return srv.Server
	}

	untrusted := build("10.0.0.0/8")
	require.Equal(t, http.StatusOK, get(untrusted, "198.51.100.1"))
	require.Equal(t, http.StatusTooManyRequests, get(untrusted, "198.51.100.2"), "a new spoofed address is the same client")
	require.Equal(t, http.StatusTooManyRequests, get(untrusted, "198.51.100.3, 10.0.0.1"))

	// Each pair runs back to back: the bucket refills once a second.
	trusted := build("0.0.0.0/32")
	require.Equal(t, http.StatusOK, get(trusted, "198.51.100.1"))
	require.Equal(t, http.StatusTooManyRequests, get(trusted, "198.51.100.1"), "the same client again")
	require.Equal(t, http.StatusOK, get(trusted, "198.51.100.2"), "another client behind the proxy")
	require.Equal(t, http.StatusOK, get(trusted, "6.6.6.6, 198.51.100.3"))
	require.Equal(t, http.StatusTooManyRequests, get(trusted, "198.51.100.3"), "the left part was the client's own")
	require.Equal(t, http.StatusOK, get(trusted, "198.51.100.9, garbage"), "garbage: counted against the proxy")
	require.Equal(t, http.StatusTooManyRequests, get(trusted, "not-an-ip"), "garbage again: the proxy again")

	_, err := app.NewAPI(app.APIConfig{AdminToken: testenv.AdminToken, Config: api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
		ProxyHeader: "X-Forwarded-For"}}, starter.Config{}, e.DB, e.Gate, e.Orders)
	require.ErrorContains(t, err, "SECKILL_TRUSTED_PROXIES is empty")
}
