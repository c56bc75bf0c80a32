package api_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/sessions"
	"github.com/seckill/seckill/temporal/starter"
)

// newServer builds an API over e's Redis and Temporal with store as its
// MySQL side and the test secrets, for tests that wire it themselves.
func newServer(t *testing.T, e *testenv.Env, cfg app.APIConfig, store app.APIStore) *app.API {
	t.Helper()
	cfg.JWTSecret, cfg.WebhookSecret, cfg.AdminToken = testenv.JWTSecret, testenv.WebhookSecret, testenv.AdminToken
	if cfg.Logger == nil {
		cfg.Logger = e.Log
	}
	if cfg.Controls == nil {
		// The session controls on the same MySQL side when it has them.
		var rows sessions.Store = e.DB
		if own, ok := store.(sessions.Store); ok {
			rows = own
		}
		cfg.Controls = &sessions.Controls{Store: rows, Stock: e.Gate, Lives: e.Orders, Log: cfg.Logger}
	}
	srv, err := app.NewAPI(cfg, starter.Config{}, store, e.Gate, e.Orders)
	require.NoError(t, err)
	return srv
}

// serve listens on a loopback port with srv's app until the test ends and
// points e's requests at it.
func serve(t *testing.T, e *testenv.Env, srv *app.API) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	app := srv.App()
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	e.BaseURL = "http://" + ln.Addr().String()
}

// routesOnly are the services of a server whose routes are looked at but
// whose handlers reach no store: admission alone, starting nothing.
func routesOnly() api.Services {
	return api.Services{Admission: admission.New(admission.Config{Starts: refuseStarts{}})}
}

// refuseStarts is the starter of a server that must start no workflow:
// every winner's start is left to the pending-start outbox.
type refuseStarts struct{}

func (refuseStarts) Offer(*seckill.OrderRequest) bool { return false }
