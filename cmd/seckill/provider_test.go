package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/app"
)

// Every process that opens, applies or refunds a payment refuses to start
// unless a payment provider is named: the worker, and the API always (it
// opens checkouts, with or without the eager-start worker that runs refund
// steps). The sandbox moves no money, so it is never a default. The
// refusal comes before any connection and names the variable.
func TestProcessesRefuseAnImplicitSandbox(t *testing.T) {
	t.Setenv("SECKILL_PAYMENT_PROVIDER", "")
	os.Unsetenv("SECKILL_PAYMENT_PROVIDER")
	for _, eager := range []string{"true", "false"} {
		t.Setenv("SECKILL_EAGER_START", eager)
		for _, sub := range []string{"worker", "api"} {
			cmd := rootCmd()
			cmd.SetArgs([]string{sub})
			err := cmd.Execute()
			require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER", "%s, eager start %s", sub, eager)
			require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER=sandbox", "%s, eager start %s", sub, eager)
		}
	}

	t.Setenv("SECKILL_PAYMENT_PROVIDER", "paypal")
	_, err := app.LoadConfig()
	require.ErrorContains(t, err, `the providers are "sandbox"`)

	t.Setenv("SECKILL_PAYMENT_PROVIDER", "sandbox")
	c, err := app.LoadConfig()
	require.NoError(t, err)
	require.NoError(t, c.RequireProvider())
}

// The sandbox's checkout pages (/dev/checkout/…, which send payments
// signed with the real webhook secret) are served only when the sandbox is
// named (`seckill dev` names it); an API built without a provider refuses,
// naming the variable. Nothing here connects: the routes are decided when
// the server is built (the page itself answers 503, its Redis being away).
func TestSandboxPagesOnlyWhenNamed(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	page := func(provider string) (int, error) {
		c := &app.Config{JWTSecret: "j", WebhookSecret: "w", AdminToken: "a", RedisPrefix: "x", TaskQueue: "q",
			PaymentProvider: provider, PaymentURL: "https://payments.internal/v1", PaymentProviderSecret: "0123456789abcdef0123"}
		m := &app.Main{Config: c, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		srv, err := m.APIServer(false)
		if err != nil {
			return 0, err
		}
		resp, err := srv.App().Test(httptest.NewRequest("GET", "/dev/checkout/sbx_0123456789abcdef01234567", nil), -1)
		require.NoError(t, err)
		return resp.StatusCode, nil
	}
	_, err := page("")
	require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER")
	code, err := page(app.HTTPProvider)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "no sandbox pages with another provider")
	code, err = page(app.SandboxProvider)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code, "the sandbox's page is served")
}
