package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The public order shape: every field of the order under its contract
// name, an absent time (pay_deadline, updated_at before the row exists)
// omitted rather than zero or null, internal fields never.
func TestOrderViewJSON(t *testing.T) {
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	o := &seckill.Order{
		OrderNo: "7-abc", SessionID: 7, SKUID: 70, UserID: 3, Quantity: 2, AmountCents: 1998,
		Status: seckill.StatusQueued, CreatedAt: created, TraceID: "secret-trace",
	}
	decode := func(v orderJSON) map[string]any {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}

	queued := orderJSON{Order: o}
	queued.Queued = 12
	m := decode(queued)
	assert.Equal(t, map[string]any{
		"order_no": "7-abc", "session_id": 7.0, "sku_id": 70.0, "user_id": 3.0, "quantity": 2.0,
		"amount_cents": 1998.0, "status": "QUEUED", "created_at": "2026-12-01T10:00:00Z",
		"queued": 12.0,
	}, m)

	o.Status, o.PayDeadline, o.UpdatedAt = seckill.StatusWaitPay, created.Add(15*time.Minute), created.Add(time.Second)
	m = decode(orderJSON{Order: o})
	assert.Equal(t, "2026-12-01T10:15:00Z", m["pay_deadline"])
	assert.Equal(t, "2026-12-01T10:00:01Z", m["updated_at"])
	assert.Equal(t, "WAIT_PAY", m["status"])
	assert.NotContains(t, decode(orderJSON{Order: &seckill.Order{OrderNo: "7-x", Status: seckill.StatusFailed}}), "created_at")
	assert.NotContains(t, m, "queued")
}
