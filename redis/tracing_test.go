package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/redis"
)

// A traced purchase's span is kept in its reservation record after the
// trace id, so that a start made from the pending-start entry (the relay's)
// continues the purchase's trace; a record without one, or with a trace
// id of another shape, reads as before.
func TestReservationRecordKeepsThePurchaseSpan(t *testing.T) {
	const trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	at := time.UnixMilli(1_764_000_000_123).UTC()
	rec := redis.ReservationRecord{UserID: 42, Quantity: 1, Mask: 1, At: at, TraceID: trace, SpanID: span}
	require.Equal(t, "42|1|1|1764000000123|"+trace+"/"+span, rec.Encode())
	got, err := redis.ParseReservationRecord(rec.Encode())
	require.NoError(t, err)
	require.Equal(t, rec, got)
	got, err = redis.ParseReservationRecord("42|1|1|1764000000123|old/trace")
	require.NoError(t, err)
	require.Equal(t, "old/trace", got.TraceID)
	require.Empty(t, got.SpanID)

	// What admit.lua writes for a traced attempt, the relay's read of the
	// pending start finds.
	e, sess := gateEnv(t, 10, 5)
	ctx := context.Background()
	no := fmt.Sprintf("%d-traced", sess.ID)
	adm, err := e.Gate.AdmitAttempt(ctx, &seckill.Attempt{Session: sess, UserID: 5, Quantity: 1, OrderNo: no,
		TraceID: trace, SpanID: span, Now: time.Now(), Fingerprint: "1"})
	require.NoError(t, err)
	require.Equal(t, span, adm.Reservation.SpanID)
	stored, err := e.Gate.Reservation(ctx, no)
	require.NoError(t, err)
	require.Equal(t, trace, stored.TraceID)
	require.Equal(t, span, stored.SpanID)
}
