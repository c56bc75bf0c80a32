package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The worker seals and opens draw seeds: it refuses to start without
// SECKILL_DRAW_KEY, or with one that is not 32 bytes in hex, naming the
// variable, before any connection. The API never needs it.
func TestWorkerRefusesToStartWithoutTheDrawKey(t *testing.T) {
	t.Setenv("SECKILL_PAYMENT_PROVIDER", "sandbox")
	for _, key := range []string{"", "not hex"} {
		t.Setenv("SECKILL_DRAW_KEY", key)
		if key == "" {
			os.Unsetenv("SECKILL_DRAW_KEY")
		}
		cmd := rootCmd()
		cmd.SetArgs([]string{"worker"})
		err := cmd.Execute()
		require.ErrorContains(t, err, "SECKILL_DRAW_KEY", "key %q", key)
	}
}
