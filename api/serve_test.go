package api_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// newServer builds an API over e's Redis and Temporal with store as its
// MySQL side and the test secrets, for tests that wire it themselves.
func newServer(t *testing.T, e *testenv.Env, cfg api.Config, store api.Store) *api.Server {
	t.Helper()
	cfg.JWTSecret, cfg.WebhookSecret, cfg.AdminToken = testenv.JWTSecret, testenv.WebhookSecret, testenv.AdminToken
	if cfg.Logger == nil {
		cfg.Logger = e.Log
	}
	srv, err := api.New(cfg, store, e.Gate, e.Orders)
	require.NoError(t, err)
	return srv
}

// serve listens on a loopback port with srv's app until the test ends and
// points e's requests at it.
func serve(t *testing.T, e *testenv.Env, srv *api.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app := srv.App()
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	e.BaseURL = "http://" + ln.Addr().String()
}
