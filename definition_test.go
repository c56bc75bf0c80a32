package seckill_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// A sale's definition comes back as the same sale, defaults filled in as
// the design brief gives them, and its fingerprint is the body as decoded:
// the same fields in another order are the same create.
func TestSessionDefinition(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	start, end := now.Add(time.Hour), now.Add(2*time.Hour)
	sale := &seckill.Session{Title: "Sneaker", PerUserLimit: 1, StartAt: start, EndAt: end, Mode: seckill.ModeDraw,
		Items: []seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 9900, TotalStock: 2}, {SKUID: 39, Title: "EU 39", PriceCents: 9900, TotalStock: 3}}}
	body, err := json.Marshal(seckill.DefinitionOf(sale))
	require.NoError(t, err)
	var d seckill.SessionDefinition
	require.NoError(t, json.Unmarshal(body, &d))
	got, err := d.Session(now)
	require.NoError(t, err)
	require.Equal(t, 5, got.TotalStock)
	require.Len(t, got.Items, 2)
	require.Equal(t, start, got.StartAt)
	require.Equal(t, now, got.RegisterFrom, "registration opens at the creation")
	require.Equal(t, start, got.RegisterUntil, "and closes at the start")
	require.Equal(t, int(seckill.DefaultRightTTL.Seconds()), got.RightTTLSeconds)

	var reordered seckill.SessionDefinition
	require.NoError(t, json.Unmarshal([]byte(`{"end_at":"`+end.Format(time.RFC3339)+`","title":"Sneaker","start_at":"`+start.Format(time.RFC3339)+
		`","mode":"draw","per_user_limit":1,"items":[{"title":"EU 38","sku_id":38,"stock":2,"price_cents":9900},{"sku_id":39,"title":"EU 39","price_cents":9900,"stock":3}]}`), &reordered))
	require.Equal(t, d.Fingerprint(), reordered.Fingerprint())
	stock := 4
	reordered.Items[0].Stock = &stock
	require.NotEqual(t, d.Fingerprint(), reordered.Fingerprint())

	for _, c := range []struct{ body, msg string }{
		{`{"title":"t","per_user_limit":1,"start_at":"soon","end_at":"2027-01-01T00:00:00Z","sku_id":1,"price_cents":1,"stock":1}`, `"start_at" must be an RFC 3339 time`},
		{`{"title":"t","per_user_limit":1,"start_at":"2027-01-01T00:00:00Z","end_at":"2027-01-02T00:00:00Z","sku_id":1,"stock":1}`, `"price_cents" is required`},
		{`{"title":"t","start_at":"2027-01-01T00:00:00Z","end_at":"2027-01-02T00:00:00Z","sku_id":1,"price_cents":1,"stock":1}`, `"per_user_limit" is required`},
		{`{"title":"t","per_user_limit":1,"start_at":"2027-01-01T00:00:00Z","end_at":"2027-01-02T00:00:00Z","sku_id":1,"price_cents":1,"stock":1,"items":[]}`, "beside them"},
	} {
		var bad seckill.SessionDefinition
		require.NoError(t, json.Unmarshal([]byte(c.body), &bad))
		_, err := bad.Session(now)
		require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), c.body)
		require.ErrorContains(t, err, c.msg)
	}
}
