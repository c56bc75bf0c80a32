package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/app"
)

// The worker (and the API, whose eager-start worker runs refund steps too)
// refuses to start unless a payment provider is named: the sandbox moves no
// money, so it is never a default. The refusal comes before any connection
// and names the variable.
func TestWorkerRefusesAnImplicitSandbox(t *testing.T) {
	t.Setenv("SECKILL_PAYMENT_PROVIDER", "")
	os.Unsetenv("SECKILL_PAYMENT_PROVIDER")
	t.Setenv("SECKILL_EAGER_START", "true")
	for _, sub := range []string{"worker", "api"} {
		cmd := rootCmd()
		cmd.SetArgs([]string{sub})
		err := cmd.Execute()
		require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER", sub)
		require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER=sandbox", sub)
	}

	// An API without an embedded worker runs no refunds: the provider is
	// not its business (it stops at the missing secrets instead).
	t.Setenv("SECKILL_EAGER_START", "false")
	for _, v := range allSecrets {
		t.Setenv(v, "")
	}
	cmd := rootCmd()
	cmd.SetArgs([]string{"api"})
	err := cmd.Execute()
	require.ErrorContains(t, err, "SECKILL_JWT_SECRET")
	require.NotContains(t, err.Error(), "SECKILL_PAYMENT_PROVIDER")

	t.Setenv("SECKILL_PAYMENT_PROVIDER", "paypal")
	_, err = app.LoadConfig()
	require.ErrorContains(t, err, `the providers are "sandbox"`)

	t.Setenv("SECKILL_PAYMENT_PROVIDER", "sandbox")
	c, err := app.LoadConfig()
	require.NoError(t, err)
	require.NoError(t, c.RequireProvider())
}
