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

// Encode and ParseReservationRecord are each other's inverse, the trace id
// may contain the separator, and a malformed record is an error.
func TestReservationRecordRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_764_000_000_123).UTC()
	for _, rec := range []redis.ReservationRecord{
		{UserID: 42, Quantity: 1, Mask: 1, At: at, TraceID: "trace-1"},
		{UserID: 7, Quantity: 3, Mask: 0b10101, At: at, TraceID: "a|b|c"},
		{UserID: 1 << 40, Quantity: 30, Mask: 1<<30 - 1, At: at, TraceID: ""},
	} {
		got, err := redis.ParseReservationRecord(rec.Encode())
		require.NoError(t, err, rec.Encode())
		require.Equal(t, rec, got)
	}
	require.Equal(t, "42|2|5|1764000000123|t", redis.ReservationRecord{UserID: 42, Quantity: 2, Mask: 5, At: at, TraceID: "t"}.Encode(),
		"the layout admit.lua and release.lua share")
	for _, raw := range []string{"", "42|1|1|1764000000123", "x|1|1|1|t", "42|one|1|1|t", "42|1|1|soon|t"} {
		_, err := redis.ParseReservationRecord(raw)
		require.Error(t, err, raw)
	}
	res := redis.ReservationRecord{UserID: 42, Quantity: 2, Mask: 0b101, At: at, TraceID: "t"}.Reservation(3, "3-x")
	require.Equal(t, &seckill.Reservation{OrderNo: "3-x", SessionID: 3, UserID: 42, Quantity: 2, Slots: []int{1, 3}, ReservedAt: at, TraceID: "t"}, res)
	require.Equal(t, int64(0b101), redis.NewReservationRecord(res).Mask)
}

// The Lua side agrees with the Go type both ways: what admit.lua writes
// parses into the reservation it admitted, and what Go writes (Rebuild)
// release.lua gives back exactly: stock, the user's count and only the
// record's slots.
func TestReservationRecordMatchesTheScripts(t *testing.T) {
	e, sess := gateEnv(t, 10, 5)
	ctx := context.Background()
	resvKey := fmt.Sprintf("%s:{s%d}:resv", e.Prefix, sess.ID)
	buyersKey := fmt.Sprintf("%s:{s%d}:buyers", e.Prefix, sess.ID)

	// Lua writes, Go reads.
	at := time.Now()
	no := fmt.Sprintf("%d-lua", sess.ID)
	admitted, _, err := e.Gate.Admit(ctx, sess, 77, 3, no, "trace|with|bars", at)
	require.NoError(t, err)
	raw, err := e.Redis.HGet(ctx, resvKey, no).Result()
	require.NoError(t, err)
	rec, err := redis.ParseReservationRecord(raw)
	require.NoError(t, err)
	require.Equal(t, redis.ReservationRecord{UserID: 77, Quantity: 3, Mask: 0b111, At: time.UnixMilli(at.UnixMilli()).UTC(), TraceID: "trace|with|bars"}, rec)
	require.Equal(t, admitted, rec.Reservation(sess.ID, no))
	require.Equal(t, raw, rec.Encode(), "Go encodes byte for byte what the script wrote")

	// Go writes, Lua reads: two holdings of one user, then release one.
	held := []seckill.Reservation{
		{OrderNo: fmt.Sprintf("%d-go1", sess.ID), SessionID: sess.ID, UserID: 9, Quantity: 1, Slots: []int{1}, ReservedAt: at, TraceID: "g1"},
		{OrderNo: fmt.Sprintf("%d-go2", sess.ID), SessionID: sess.ID, UserID: 9, Quantity: 2, Slots: []int{2, 4}, ReservedAt: at, TraceID: "g|2"},
	}
	require.NoError(t, e.Gate.Rebuild(ctx, sess.ID, 4, nil, held))
	raw, err = e.Redis.HGet(ctx, resvKey, held[1].OrderNo).Result()
	require.NoError(t, err)
	require.Equal(t, redis.NewReservationRecord(&held[1]).Encode(), raw)
	n, err := e.Gate.Release(ctx, sess.ID, held[1].OrderNo)
	require.NoError(t, err)
	require.Equal(t, 2, n, "release.lua read the quantity")
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 6, stock)
	buyers, err := e.Redis.HGetAll(ctx, buyersKey).Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"9": "1", "9:slots": "1"}, buyers, "release.lua read the user and freed exactly slots 2 and 4")
	got, err := e.Gate.Reservation(ctx, held[0].OrderNo)
	require.NoError(t, err)
	want := held[0]
	want.ReservedAt = time.UnixMilli(at.UnixMilli()).UTC()
	require.Equal(t, &want, got)
}
