package api_test

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

// Admin: create a session, preheat it idempotently, never overwrite live
// stock, rebuild with force, reconcile; every admin call needs the token.
func TestAdminSessionLifecycle(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := testenv.AdminToken
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	end := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	body := map[string]any{"sku_id": 9, "title": "Phone", "price_cents": 4999, "stock": 3,
		"per_user_limit": 1, "start_at": start, "end_at": end}

	requireError(t, e.Do("POST", "/admin/v1/sessions", "", body), 401, "UNAUTHENTICATED", "admin token")
	requireError(t, e.Do("POST", "/admin/v1/sessions", "not-the-token", body), 401, "UNAUTHENTICATED", "admin token")
	for field, bad := range map[string]any{"stock": 0, "per_user_limit": 99, "price_cents": -1, "start_at": "tomorrow", "end_at": start} {
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
	requireError(t, e.Do("POST", "/admin/v1/sessions", admin, free), 400, "INVALID_ARGUMENT", "free items")
	missing := map[string]any{"sku_id": 9}
	requireError(t, e.Do("POST", "/admin/v1/sessions", admin, missing), 400, "INVALID_ARGUMENT", `"title" is required`)

	c := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, c.Status, "%s", c.Raw)
	id := int64(c.Body["id"].(float64))
	require.Equal(t, "Phone", c.Str("title"))
	require.Equal(t, float64(0), c.Body["remaining_stock"], "not preheated yet")
	path := fmt.Sprintf("/admin/v1/sessions/%d", id)

	requireError(t, e.Do("POST", "/admin/v1/sessions/777/preheat", admin, nil), 404, "NOT_FOUND", "not found")
	p := e.Do("POST", path+"/preheat", admin, nil)
	require.Equal(t, 200, p.Status, "%s", p.Raw)
	require.Equal(t, float64(3), p.Body["stock"])

	// Sell one unit, then preheat again: live stock is never overwritten.
	tok := e.Token(5)
	o := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", id), tok, nil)
	require.Equal(t, http.StatusAccepted, o.Status, "%s", o.Raw)
	no := o.Str("order_no")
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	p = e.Do("POST", path+"/preheat", admin, nil)
	require.Equal(t, float64(2), p.Body["stock"])
	g := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", id), "", nil)
	require.Equal(t, float64(2), g.Body["remaining_stock"])
	require.Equal(t, "ACTIVE", g.Str("state"))

	// Redis loses its data: plain preheat refuses (orders exist), force
	// rebuilds from MySQL, and the invariants hold again.
	iter := e.Redis.Scan(context.Background(), 0, e.Prefix+":*", 100).Iterator()
	for iter.Next(context.Background()) {
		e.Redis.Del(context.Background(), iter.Val())
	}
	requireError(t, e.Do("POST", path+"/preheat", admin, nil), 409, "CONFLICT", "force=true")
	requireError(t, e.Do("POST", path+"/preheat?force=maybe", admin, nil), 400, "INVALID_ARGUMENT", "force")
	f := e.Do("POST", path+"/preheat?force=true", admin, nil)
	require.Equal(t, 200, f.Status, "%s", f.Raw)
	require.Equal(t, float64(2), f.Body["stock"])
	// The rebuilt reservation keeps the user's limit.
	requireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", id), tok, nil), 409, "LIMIT_EXCEEDED", "at most 1")

	rec := e.Do("GET", path+"/reconcile", admin, nil)
	require.Equal(t, 200, rec.Status, "%s", rec.Raw)
	require.Equal(t, true, rec.Body["ok"], "%s", rec.Raw)
	for _, k := range []string{"ok", "total_stock", "db_stock", "redis_stock", "orders", "in_flight", "drift"} {
		require.Contains(t, rec.Body, k)
	}
	requireError(t, e.Do("GET", "/admin/v1/sessions/777/reconcile", admin, nil), 404, "NOT_FOUND", "not found")
	requireError(t, e.Do("GET", path+"/reconcile", "", nil), 401, "UNAUTHENTICATED", "admin token")
	e.RequireInvariants(id)
}

// Health: /healthz always, /readyz when every dependency answers.
func TestHealth(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	require.Equal(t, 200, e.Do("GET", "/healthz", "", nil).Status)
	r := e.Do("GET", "/readyz", "", nil)
	require.Equal(t, 200, r.Status, "%s", r.Raw)
	requireError(t, e.Do("GET", "/nope", "", nil), 404, "NOT_FOUND", "no route")
}
