package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A sale of several items in MySQL: read back with its items, each order
// takes its own item's stock (the conditional decrement refuses an item
// with none left while the sale has units), closes give them back to it,
// and stock is added to the item named.
func TestItemsInMySQL(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{Title: "Runner", Currency: "usd", PerUserLimit: 2, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
	sess.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 700, TotalStock: 2}, {SKUID: 39, Title: "EU 39", PriceCents: 800, TotalStock: 1}})
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	got, stock, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 3, stock)
	require.Equal(t, sess.Items, got.Items)
	require.Zero(t, got.SKUID)
	_, _, items, _, err := e.DB.PreheatFigures(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{38: 2, 39: 1}, items)
	_, err = e.Gate.PreheatHolding(ctx, sess.ID, 3, items, nil)
	require.NoError(t, err)

	order := func(no string, user, sku int64) *seckill.Order {
		req := seckill.NewOrderRequest(seckill.Reservation{OrderNo: fmt.Sprintf("%d-%s", sess.ID, no), SessionID: sess.ID, UserID: user,
			Quantity: 1, Slots: []int{1}, ReservedAt: now, TraceID: "trace-" + no, SKUID: sku}, got, time.Minute)
		o, err := e.DB.CreateOrder(ctx, req, now.Add(time.Minute))
		require.NoError(t, err)
		return o
	}
	a := order("a", 1, 39)
	require.Equal(t, seckill.StatusWaitPay, a.Status)
	require.EqualValues(t, 800, a.AmountCents, "EU 39's price")
	require.Equal(t, "EU 39", a.Title)
	// Redis and MySQL drifted (Redis let a second EU 39 through): MySQL
	// refuses it, though the sale has units.
	b := order("b", 2, 39)
	require.Equal(t, seckill.StatusFailed, b.Status)
	c := order("c", 3, 38)
	require.Equal(t, seckill.StatusWaitPay, c.Status)
	require.EqualValues(t, 700, c.AmountCents)
	snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nil, now)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{38: 1, 39: 0}, snap.ItemStock)
	require.Equal(t, map[int64]int{38: 1, 39: 1}, snap.ItemHeld)
	require.Equal(t, 1, snap.DBStock)

	// EU 39's order closes: its unit goes back to EU 39, once.
	for range 2 {
		_, _, err = e.DB.CloseOrder(ctx, seckill.NewOrderRequest(seckill.Reservation{OrderNo: a.OrderNo, SessionID: sess.ID,
			UserID: 1, Quantity: 1, SKUID: 39}, got, 0), "timeout")
		require.NoError(t, err)
	}
	snap, err = e.DB.SessionSnapshot(ctx, sess.ID, nil, now)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{38: 1, 39: 1}, snap.ItemStock)
	require.Equal(t, 2, snap.DBStock)

	// Stock goes to the item named; a sale of items has no price of its own.
	add := &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionAddStock, Add: 4, SKUID: 38, Actor: "ops", RequestID: "add-38"}
	changed, applied, err := e.DB.ChangeSession(ctx, add)
	require.NoError(t, err)
	require.True(t, applied)
	require.Equal(t, 7, changed.TotalStock)
	require.Equal(t, 6, changed.Items[0].TotalStock)
	_, _, err = e.DB.ChangeSession(ctx, &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionAddStock, Add: 1,
		Actor: "ops", RequestID: "add-none"})
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err), "%v", err)
	price := int64(900)
	_, err = (&seckill.SessionUpdate{PriceCents: &price}).Apply(*got)
	require.ErrorContains(t, err, "each at its own price")
	snap, err = e.DB.SessionSnapshot(ctx, sess.ID, nil, now)
	require.NoError(t, err)
	require.Equal(t, map[int64]int{38: 5, 39: 1}, snap.ItemStock)
	require.Equal(t, 6, snap.DBStock)
}

// A single-SKU sale keeps its one item row in step with the session row:
// an add, an order.
func TestSingleSKUItemFollowsItsSale(t *testing.T) {
	e, sess := store(t, 3, 1)
	ctx := context.Background()
	_, _, err := e.DB.ChangeSession(ctx, &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionAddStock, Add: 2,
		Actor: "ops", RequestID: "add"})
	require.NoError(t, err)
	o, err := e.DB.CreateOrder(ctx, request(sess, fmt.Sprintf("%d-x", sess.ID), 1, 1, 1), time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status)
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	var total, stock int
	require.NoError(t, raw.QueryRow("SELECT total_stock, stock FROM session_items WHERE session_id = ? AND sku_id = ?", sess.ID, sess.SKUID).
		Scan(&total, &stock))
	require.Equal(t, 5, total)
	require.Equal(t, 4, stock)
}
