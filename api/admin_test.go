package api_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// Admin: create a session, preheat it idempotently, never overwrite live
// stock, rebuild with force, reconcile; every admin call needs the token.
func TestAdminSessionLifecycle(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := testenv.AdminToken
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	end := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	body := map[string]any{"sku_id": 9, "title": "Phone", "price_cents": 4999, "stock": 3,
		"per_user_limit": 1, "start_at": start, "end_at": end}

	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", "", body), 401, "UNAUTHENTICATED", "operator credential")
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", "not-the-token", body), 401, "UNAUTHENTICATED", "operator credential")
	for field, bad := range map[string]any{"stock": 0, "per_user_limit": 99, "price_cents": -1, "start_at": "tomorrow",
		"currency": "EUR", "title": "", "sku_id": "9"} {
		b := map[string]any{}
		for k, v := range body {
			b[k] = v
		}
		b[field] = bad
		r := e.Do("POST", "/admin/v1/sessions", admin, b)
		require.Equal(t, 400, r.Status, "%s=%v: %s", field, bad, r.Raw)
		require.Equal(t, "INVALID_ARGUMENT", r.Str("code"))
	}
	// Free items are refused at creation (an order of amount 0 could never
	// be paid), with a message that says so.
	free := map[string]any{}
	for k, v := range body {
		free[k] = v
	}
	free["price_cents"] = 0
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, free), 400, "INVALID_ARGUMENT", "free items")
	// A window that ends before it starts, or has ended already, is well
	// formed but cannot be a sale: 422, and nothing is created.
	for what, end := range map[string]string{"before its start": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339),
		"in the past": time.Now().UTC().Add(-time.Second / 2).Format(time.RFC3339)} {
		b := map[string]any{}
		for k, v := range body {
			b[k] = v
		}
		b["end_at"] = end
		if what == "in the past" {
			b["start_at"] = time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)
		}
		testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, b), 422, "OUT_OF_RANGE", "end_at")
	}
	// A currency no one pays in, a typo above all, is refused before the
	// sale exists: each of its payments would fail at the provider's
	// checkout, the winners' units held until the pay timeout.
	for _, bad := range []string{"uds", "xxx", "xts"} {
		b := maps.Clone(body)
		b["currency"], b["title"] = bad, "priced in "+bad
		testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, b), 400, "INVALID_ARGUMENT", "not an ISO 4217 currency in use")
	}
	listed := e.Do("GET", "/api/v1/sessions", "", nil)
	require.Equal(t, 200, listed.Status)
	require.NotContains(t, string(listed.Raw), "priced in", "a refused sale was created")
	missing := map[string]any{"sku_id": 9}
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, missing), 400, "INVALID_ARGUMENT", `"title" is required`)

	ctx := context.Background()
	cl := e.Client()
	created, err := cl.CreateSession(ctx, &seckill.Session{SKUID: 9, Title: "Phone", PriceCents: 4999, Currency: "eur", TotalStock: 3,
		PerUserLimit: 1, StartAt: time.Now().Add(-time.Second), EndAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	id := created.ID
	require.Equal(t, "Phone", created.Title)
	require.Equal(t, "eur", created.Currency, "priced in its own currency")
	require.Equal(t, seckill.ModeFirstCome, created.Mode, "the create answers the sale as a read shows it")
	plain := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, 201, plain.Status, "%s", plain.Raw)
	require.Equal(t, "usd", plain.Str("currency"), "a sale without its own currency shows the deployment's")
	require.Equal(t, "first_come", plain.Str("mode"))
	require.Equal(t, 0, created.RemainingStock, "not preheated yet")
	path := fmt.Sprintf("/admin/v1/sessions/%d", id)

	_, err = cl.Preheat(ctx, 777, false)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "%v", err)
	p, err := cl.Preheat(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 3, p.Stock)

	// Sell one unit, then preheat again: live stock is never overwritten.
	tok := e.Token(5)
	o, err := cl.WithToken(tok).Buy(ctx, id, client.BuyOptions{})
	require.NoError(t, err)
	e.WaitStatus(tok, o.OrderNo, 20*time.Second, seckill.StatusWaitPay)
	p, err = cl.Preheat(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 2, p.Stock)
	g, err := cl.Session(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, g.RemainingStock)
	require.Equal(t, "eur", g.Currency)
	require.Equal(t, seckill.SessionActive, g.State)

	// Redis loses its data: plain preheat refuses (orders exist), force
	// rebuilds from MySQL, and the invariants hold again.
	iter := e.Redis.Scan(context.Background(), 0, e.Prefix+":*", 100).Iterator()
	for iter.Next(context.Background()) {
		e.Redis.Del(context.Background(), iter.Val())
	}
	testenv.RequireError(t, e.Do("POST", path+"/preheat", admin, nil), 409, "CONFLICT", "force=true")
	testenv.RequireError(t, e.Do("POST", path+"/preheat?force=maybe", admin, nil), 400, "INVALID_ARGUMENT", "force")
	testenv.RequireError(t, e.Do("POST", path+"/preheat?froce=true", admin, nil), 400, "INVALID_ARGUMENT", "takes force")
	f, err := cl.Preheat(ctx, id, true)
	require.NoError(t, err)
	require.Equal(t, 2, f.Stock)
	require.True(t, f.Rebuilt)
	// The rebuilt reservation keeps the user's limit.
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", id), tok, nil), 409, "LIMIT_EXCEEDED", "at most 1")

	rec := e.Do("GET", path+"/reconcile", admin, nil)
	require.Equal(t, 200, rec.Status, "%s", rec.Raw)
	require.Equal(t, true, rec.Body["ok"], "%s", rec.Raw)
	for _, k := range []string{"ok", "total_stock", "db_stock", "redis_stock", "orders", "in_flight", "drift"} {
		require.Contains(t, rec.Body, k)
	}
	testenv.RequireError(t, e.Do("GET", "/admin/v1/sessions/777/reconcile", admin, nil), 404, "NOT_FOUND", "not found")
	testenv.RequireError(t, e.Do("GET", path+"/reconcile", "", nil), 401, "UNAUTHENTICATED", "operator credential")
	e.RequireInvariants(id)
}

// Health: /healthz always, /readyz when every dependency answers.
func TestHealth(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	require.Equal(t, 200, e.Do("GET", "/healthz", "", nil).Status)
	r := e.Do("GET", "/readyz", "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	testenv.RequireError(t, e.Do("GET", "/nope", "", nil), 404, "NOT_FOUND", "no route")
}
