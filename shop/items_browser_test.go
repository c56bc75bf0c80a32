package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A sale of sizes on the page: a button per size with its stock left, a
// sold-out size greyed, the one chosen bought at its price.
func TestBrowserSizes(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	now := time.Now().UTC()
	// Priced in yen, which has no minor unit: 700 is ¥700, not 7.00.
	sess := &seckill.Session{Title: "Runner", Currency: "jpy", PerUserLimit: 1, StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour)}
	sess.SetItems([]seckill.Item{{SKUID: 3801, Title: "EU 38", PriceCents: 700, TotalStock: 1},
		{SKUID: 3802, Title: "EU 39", PriceCents: 800, TotalStock: 2}})
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	_, err := e.Gate.PreheatHolding(ctx, sess.ID, 3, map[int64]int{3801: 1, 3802: 2}, nil)
	require.NoError(t, err)
	// Another shopper takes the last EU 38.
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(8), map[string]any{"sku_id": 3801})
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)

	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(
		wait(c+`[data-state="ACTIVE"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3801"]:disabled`),
		wait(c+` [data-role="sizes"] button[data-sku="3802"][aria-pressed="true"]`),
	)
	require.Equal(t, "EU 38 · sold out", p.text(c+` button[data-sku="3801"]`))
	require.Equal(t, "EU 39 · 2 left", p.text(c+` button[data-sku="3802"]`))
	require.Equal(t, "price 800 JPY", p.text(c+` [data-role="price"]`), "the chosen size's price")
	p.pasteToken(9)
	p.do(
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	no := p.attr("#order", "data-order-no")
	waitOrder(e, 9, no, seckill.StatusWaitPay)
	o := e.Do("GET", "/api/v1/orders/"+no, e.Token(9), nil)
	require.EqualValues(t, 3802, o.Body["sku_id"])
	require.EqualValues(t, 800, o.Body["amount_cents"])
	require.Equal(t, "EU 39", o.Str("title"))
	p.do(wait(c + ` button[data-sku="3802"][data-remaining="1"]`))

	// The last pair goes elsewhere: every size greyed, a price still shown.
	last := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), e.Token(10), map[string]any{"sku_id": 3802})
	require.Equal(t, http.StatusAccepted, last.Status, "%s", last.Raw)
	p.do(
		wait(c+`[data-state="SOLD_OUT"]`),
		wait(c+` button[data-sku="3802"]:disabled`),
	)
	require.Equal(t, "price 700 JPY", p.text(c+` [data-role="price"]`), "the first size's price, never NaN")
	waitOrder(e, 8, r.Str("order_no"), seckill.StatusWaitPay)
	waitOrder(e, 10, last.Str("order_no"), seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// A reserved sale of sizes on the page: the shopper chooses a size and
// registers for it (the button names it); the card then keeps that size,
// the others cannot be chosen, and a page opened later learns it from the
// API; at the start the registrant buys the size registered for.
func TestBrowserRegistersForASize(t *testing.T) {
	t.Parallel()
	e := testenv.New(t, testenv.Options{})
	start := time.Now().Add(reservedLead).Truncate(time.Second)
	id := reservedSale(t, e, start, start, map[string]any{"sku_id": nil, "price_cents": nil, "stock": nil,
		"items": []map[string]any{{"sku_id": 3801, "title": "EU 38", "price_cents": 700, "stock": 1},
			{"sku_id": 3802, "title": "EU 39", "price_cents": 800, "stock": 1}}})
	c := card(id)
	status := c + ` [data-role="register-status"]`
	register := c + ` button[data-role="register"]`

	p := openShop(t, e, "/")
	p.pasteToken(31)
	p.do(
		wait(c+`[data-registration="OPEN"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3801"][aria-pressed="true"]`),
		click(c+` [data-role="sizes"] button[data-sku="3802"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3802"][aria-pressed="true"]`),
	)
	require.Equal(t, "Register for EU 39", p.text(register))
	p.do(
		click(register),
		wait(status+`[data-reg="REGISTERED"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3801"]:disabled`),
	)
	require.Contains(t, p.text(status), "Your size: EU 39.")
	mine := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registration", id), e.Token(31), nil)
	require.EqualValues(t, 3802, mine.Body["sku_id"], "%s", mine.Raw)

	// Another page of the same shopper asks and keeps the size too.
	q := openShop(t, e, fmt.Sprintf("/?session=%d", id))
	q.pasteToken(31)
	q.do(
		wait(status+`[data-reg="REGISTERED"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3802"][aria-pressed="true"]`),
		wait(c+` [data-role="sizes"] button[data-sku="3801"]:disabled`),
	)
	require.Contains(t, q.text(c+` [data-role="price"]`), "8.00", "the size registered for's price")

	p.do(
		wait(c+`[data-state="ACTIVE"][data-registration="ON_SALE"]`),
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	no := p.attr("#order", "data-order-no")
	waitOrder(e, 31, no, seckill.StatusWaitPay)
	o := e.Do("GET", "/api/v1/orders/"+no, e.Token(31), nil)
	require.EqualValues(t, 3802, o.Body["sku_id"], "the size registered for")
	e.RequireInvariants(id)
}
