package seckill_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// Refund retries double from First up to Max, and park after Attempts
// failed runs; the default gives up to ops after about five hours.
func TestRefundRetryBackoffAndParking(t *testing.T) {
	p := seckill.RefundRetry{First: time.Second, Max: 5 * time.Second, Attempts: 4}
	var got []time.Duration
	for n := 1; n <= 5; n++ {
		got = append(got, p.Backoff(n))
	}
	require.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
	require.False(t, p.Park(3))
	require.True(t, p.Park(4))
	require.False(t, seckill.RefundRetry{First: time.Second}.Park(1000), "Attempts 0: never parked")

	d := seckill.DefaultRefundRetry
	var total time.Duration
	for n := 1; n < d.Attempts; n++ {
		total += d.Backoff(n)
	}
	require.InDelta(t, 5*time.Hour, total, float64(time.Hour), "tried for about five hours, got %s", total)
}
