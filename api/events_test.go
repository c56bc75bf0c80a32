package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// GET /admin/v1/events: admin auth; a bad cursor or limit is 400 and the
// error's shape; pages follow next_cursor to the end, each event once in
// feed order, and the last cursor, passed again, waits for new events.
func TestEventFeed(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(5, 1, 300)
	ctx := context.Background()
	for i := range 5 {
		no := fmt.Sprintf("%d-feed%d", sess.ID, i)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: int64(i + 1),
			Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: 300}
		_, _, err := e.DB.CloseOrder(ctx, req, "cancelled")
		require.NoError(t, err)
	}
	_, err := e.DB.SequenceEvents(ctx, 100) // the worker's relay does this
	require.NoError(t, err)

	testenv.RequireError(t, e.Do("GET", "/admin/v1/events", "", nil), 401, "UNAUTHENTICATED", "operator credential")
	testenv.RequireError(t, e.Do("GET", "/admin/v1/events", e.Token(1), nil), 401, "UNAUTHENTICATED", "operator credential")
	for _, q := range []string{"cursor=abc", "cursor=-1", "cursor=1.5", "limit=0", "limit=1001", "limit=x", "after=3", "limit=5&limit=6"} {
		testenv.RequireError(t, e.Do("GET", "/admin/v1/events?"+q, testenv.AdminToken, nil), 400, "INVALID_ARGUMENT", "")
	}

	type page struct {
		Events []struct {
			ID    string          `json:"event_id"`
			Type  string          `json:"type"`
			At    time.Time       `json:"at"`
			Order json.RawMessage `json:"order"`
		} `json:"events"`
		NextCursor string `json:"next_cursor"`
	}
	get := func(query string) page {
		r := e.Do("GET", "/admin/v1/events"+query, testenv.AdminToken, nil)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		var p page
		require.NoError(t, json.Unmarshal(r.Raw, &p))
		return p
	}
	require.Len(t, get("").Events, 5, "the default page holds them all")
	var sizes []int
	var orders []string
	seen := map[string]bool{}
	cursor := ""
	for {
		p := get("?limit=2&cursor=" + cursor)
		if len(p.Events) == 0 {
			require.Empty(t, p.NextCursor, "at the end next_cursor is absent, as in every list")
			break
		}
		require.NotEmpty(t, p.NextCursor)
		sizes = append(sizes, len(p.Events))
		for _, ev := range p.Events {
			require.False(t, seen[ev.ID])
			seen[ev.ID] = true
			require.Equal(t, string(seckill.EventOrderClosed), ev.Type)
			require.False(t, ev.At.IsZero())
			var o seckill.Order
			require.NoError(t, json.Unmarshal(ev.Order, &o))
			require.Equal(t, seckill.StatusClosed, o.Status)
			orders = append(orders, o.OrderNo)
		}
		cursor = p.NextCursor
	}
	require.Equal(t, []int{2, 2, 1}, sizes)
	for i, no := range orders {
		require.Equal(t, fmt.Sprintf("%d-feed%d", sess.ID, i), no, "in the order of the changes")
	}
}
