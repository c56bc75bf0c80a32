package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/internal/testenv"
)

// countedTokens counts the named-token lookups that reach MySQL.
type countedTokens struct {
	auth.OperatorTokens
	calls atomic.Int64
}

func (c *countedTokens) Operator(ctx context.Context, tokenHash string) (*seckill.Operator, error) {
	c.calls.Add(1)
	return c.OperatorTokens.Operator(ctx, tokenHash)
}

// Failed admin credentials are limited per client address (the address
// the API's proxy settings name): past the limit an address is answered
// 429 RATE_LIMITED before its credential is looked at, so a guesser
// costs MySQL nothing more, whatever it sends, the real token included;
// an operator at another address signs in as ever.
func TestFailedAdminCredentialsAreLimitedPerAddress(t *testing.T) {
	testenv.SkipShort(t, "MariaDB")
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	good := e.OperatorToken("night-shift", seckill.RoleViewer)
	tokens := &countedTokens{OperatorTokens: e.DB}
	proxies, err := clientip.ParseProxies("0.0.0.0/32") // app.Test's peer
	require.NoError(t, err)
	events := routesOnly()
	events.Events = e.DB
	srv, err := api.New(api.Config{JWTSecret: testenv.JWTSecret, WebhookSecret: testenv.WebhookSecret,
		Shoppers: &auth.Shoppers{Secrets: [][]byte{testenv.JWTSecret}}, Operators: &auth.Operators{Bootstrap: testenv.AdminToken, Tokens: tokens},
		Limits: api.Limits{AdminFails: 3}, ProxyHeader: "X-Forwarded-For", TrustedProxies: proxies, Logger: e.Log}, events)
	require.NoError(t, err)
	app := srv.App()
	call := func(from, token string) (*http.Response, string) {
		req := httptest.NewRequest("GET", "/admin/v1/events?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", from)
		res, err := app.Test(req, -1)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}
	forged := good[:len(good)-4] + "xxxx" // a named token's shape: looked up in MySQL

	for range 3 {
		res, body := call("198.51.100.7", forged)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
	}
	require.EqualValues(t, 3, tokens.calls.Load())
	for _, tok := range []string{forged, "not-a-token", good} {
		res, body := call("198.51.100.7", tok)
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode, body)
		require.Contains(t, body, `"code":"RATE_LIMITED"`)
		require.Contains(t, body, `"trace_id"`)
		require.NotEmpty(t, res.Header.Get("Retry-After"))
	}
	require.EqualValues(t, 3, tokens.calls.Load(), "an address over the limit costs MySQL nothing")

	res, body := call("198.51.100.8", good)
	require.Equal(t, http.StatusOK, res.StatusCode, "another address: %s", body)
	res, body = call("198.51.100.9", testenv.AdminToken)
	require.Equal(t, http.StatusOK, res.StatusCode, "the bootstrap admin elsewhere: %s", body)
	// Good credentials cost no failure: an address keeps its whole budget.
	for range 5 {
		res, body = call("198.51.100.8", good)
		require.Equal(t, http.StatusOK, res.StatusCode, body)
	}
}
