package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// A sale of sizes: each item sells out on its own, the per-user limit
// holds across the sale, each order carries its item and its price, and a
// unit given back goes to its own item.
func TestSaleOfItems(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := testenv.AdminToken
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	end := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	sizes := []map[string]any{
		{"sku_id": 3801, "title": "EU 38", "price_cents": 700, "stock": 2},
		{"sku_id": 3802, "title": "EU 39", "price_cents": 800, "stock": 1},
		{"sku_id": 3803, "title": "EU 40", "price_cents": 900, "stock": 3},
	}
	body := map[string]any{"title": "Runner", "per_user_limit": 1, "start_at": start, "end_at": end, "items": sizes}

	// Bad sales change nothing and say what was wrong.
	for what, bad := range map[string]struct {
		items any
		extra map[string]any
		msg   string
	}{
		"a SKU twice":        {[]map[string]any{sizes[0], sizes[0]}, nil, "listed twice"},
		"an item unpriced":   {[]map[string]any{sizes[0], {"sku_id": 3809, "title": "x", "stock": 1}}, nil, "items[1] needs"},
		"no items":           {[]map[string]any{}, nil, "1 to 100 items"},
		"items and a stock":  {sizes, map[string]any{"stock": 5}, "not beside them"},
		"a draw of two each": {sizes, map[string]any{"mode": "draw", "per_user_limit": 2}, "per_user_limit must be 1"},
	} {
		t.Run(what, func(t *testing.T) {
			b := map[string]any{}
			for k, v := range body {
				b[k] = v
			}
			b["items"] = bad.items
			for k, v := range bad.extra {
				b[k] = v
			}
			testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, b), http.StatusBadRequest, "INVALID_ARGUMENT", bad.msg)
		})
	}

	created := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	id := int64(created.Body["id"].(float64))
	require.NotContains(t, created.Body, "sku_id", "a sale of items has no SKU of its own")
	require.EqualValues(t, 6, created.Body["total_stock"])
	preheat := e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/preheat", id), admin, nil)
	require.Equal(t, http.StatusOK, preheat.Status, "%s", preheat.Raw)
	remaining := func() map[int64]int {
		t.Helper()
		r := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", id), "", nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		out := map[int64]int{}
		for _, it := range r.Body["items"].([]any) {
			m := it.(map[string]any)
			out[int64(m["sku_id"].(float64))] = int(m["remaining_stock"].(float64))
		}
		return out
	}
	require.Equal(t, map[int64]int{3801: 2, 3802: 1, 3803: 3}, remaining())

	buy := func(user int64, sku any, key string) *testenv.Response {
		b := map[string]any{"quantity": 1}
		if sku != nil {
			b["sku_id"] = sku
		}
		return e.Do("POST", testenv.OrdersPath(id), e.Token(user), b, api.HeaderIdempotencyKey, key)
	}
	testenv.RequireError(t, buy(1, nil, testenv.KeyAt(time.Now())), http.StatusBadRequest, "INVALID_ARGUMENT", "sku_id is required")
	testenv.RequireError(t, buy(1, 3899, testenv.KeyAt(time.Now())), http.StatusBadRequest, "INVALID_ARGUMENT", "no item with sku_id 3899")
	testenv.RequireError(t, buy(1, 0, testenv.KeyAt(time.Now())), http.StatusBadRequest, "INVALID_ARGUMENT", "sku_id")
	testenv.RequireError(t, buy(1, "3801", testenv.KeyAt(time.Now())), http.StatusBadRequest, "INVALID_ARGUMENT", "sku_id")
	require.Equal(t, map[int64]int{3801: 2, 3802: 1, 3803: 3}, remaining(), "a refused purchase moves nothing")

	// One pair per shopper, whatever the size; the key pins the size too.
	key := testenv.KeyAt(time.Now())
	first := buy(100, 3801, key)
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Raw)
	order := first.Str("order_no")
	testenv.RequireError(t, buy(100, 3803, testenv.KeyAt(time.Now())), http.StatusConflict, "LIMIT_EXCEEDED", "at most 1")
	testenv.RequireError(t, buy(100, 3803, key), http.StatusUnprocessableEntity, "IDEMPOTENCY_MISMATCH", "another request body")
	again := buy(100, 3801, key)
	require.Equal(t, order, again.Str("order_no"), "the same key and size: the same order")
	e.WaitStatus(e.Token(100), order, 15*time.Second, seckill.StatusWaitPay)
	o := e.Do("GET", "/api/v1/orders/"+order, e.Token(100), nil)
	require.EqualValues(t, 3801, o.Body["sku_id"])
	require.EqualValues(t, 700, o.Body["amount_cents"], "the item's price")
	require.Equal(t, "EU 38", o.Str("title"), "the item's title")

	// A burst spread over the sizes: each sells exactly its stock.
	var wg sync.WaitGroup
	skus := []int64{3801, 3802, 3803}
	answers := make([]*testenv.Response, 30)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = buy(int64(200+i), skus[i%3], testenv.KeyAt(time.Now()))
		}()
	}
	wg.Wait()
	won := map[int64][]string{}
	for i, r := range answers {
		sku := skus[i%3]
		switch r.Status {
		case http.StatusAccepted:
			won[sku] = append(won[sku], r.Str("order_no"))
			e.WaitStatus(e.Token(int64(200+i)), r.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)
		default:
			testenv.RequireError(t, r, http.StatusConflict, "SOLD_OUT", "")
		}
	}
	require.Len(t, won[3801], 1, "EU 38: one left after the first pair")
	require.Len(t, won[3802], 1)
	require.Len(t, won[3803], 3)
	require.Equal(t, map[int64]int{3801: 0, 3802: 0, 3803: 0}, remaining())

	// A cancelled pair goes back to its own size, and sells again there.
	var buyer int64
	for i, r := range answers {
		if r.Status == http.StatusAccepted && skus[i%3] == 3802 {
			buyer = int64(200 + i)
		}
	}
	cancel := e.Do("POST", "/api/v1/orders/"+won[3802][0]+"/cancel", e.Token(buyer), nil)
	require.Equal(t, http.StatusAccepted, cancel.Status, "%s", cancel.Raw)
	e.WaitStatus(e.Token(buyer), won[3802][0], 15*time.Second, seckill.StatusClosed)
	e.Eventually(10*time.Second, "EU 39's unit back on sale", func() error {
		if left := remaining(); left[3802] != 1 || left[3801]+left[3803] != 0 {
			return fmt.Errorf("remaining %v", left)
		}
		return nil
	})
	// A key is refused if stock came back within the skew before its
	// time (it may have been refused before): a fresh one after that.
	time.Sleep(seckill.KeyClockSkew + 100*time.Millisecond)
	testenv.RequireError(t, buy(300, 3803, testenv.KeyAt(time.Now())), http.StatusConflict, "SOLD_OUT", "")
	late := buy(301, 3802, testenv.KeyAt(time.Now()))
	require.Equal(t, http.StatusAccepted, late.Status, "%s", late.Raw)
	e.WaitStatus(e.Token(301), late.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)

	// Stock is added to an item, named.
	stockPath := fmt.Sprintf("/admin/v1/sessions/%d/stock", id)
	testenv.RequireError(t, e.Do("POST", stockPath, admin, map[string]any{"add": 2}), http.StatusBadRequest, "INVALID_ARGUMENT", "sku_id is required")
	added := e.Do("POST", stockPath, admin, map[string]any{"add": 2, "sku_id": 3803})
	require.Equal(t, http.StatusOK, added.Status, "%s", added.Raw)
	require.Equal(t, map[int64]int{3801: 0, 3802: 0, 3803: 2}, remaining())

	// Redis loses count of a size: reconcile names it, and the repair
	// rebuilds each size's stock from MySQL.
	require.NoError(t, e.Redis.HSet(context.Background(), fmt.Sprintf("%s:{s%d}:items", e.Prefix, id), "3803", 9).Err())
	report := e.Do("GET", fmt.Sprintf("/admin/v1/sessions/%d/reconcile", id), admin, nil)
	require.Equal(t, false, report.Body["ok"], "%s", report.Raw)
	require.Contains(t, string(report.Raw), "item 3803: redis_stock 9")
	repair := e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/repair", id), admin, nil)
	require.Equal(t, http.StatusOK, repair.Status, "%s", repair.Raw)
	require.Equal(t, true, repair.Body["ok"], "%s", repair.Raw)
	require.Contains(t, string(repair.Raw), "item 3803: redis_stock 9 → 2")
	require.Equal(t, map[int64]int{3801: 0, 3802: 0, 3803: 2}, remaining())

	r := e.RequireInvariants(id)
	require.Len(t, r.Items, 3)
	for _, it := range r.Items {
		require.Equal(t, it.TotalStock, it.DBStock+it.HeldQty, "item %d", it.SKUID)
		require.Equal(t, it.TotalStock, it.RedisStock+it.ReservedQty, "item %d", it.SKUID)
	}
	require.Equal(t, map[int64]int{3801: 2, 3802: 1, 3803: 5}, map[int64]int{
		r.Items[0].SKUID: r.Items[0].TotalStock, r.Items[1].SKUID: r.Items[1].TotalStock, r.Items[2].SKUID: r.Items[2].TotalStock})
}

// An item sold out on its own is answered from memory like a sold-out
// sale, while the other sizes sell: a loser without a key once the script
// refused one, a keyed loser once the watcher read the item at zero; a
// unit back on the item lifts the flag and it sells again.
func TestItemSoldOutFromMemory(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	end := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	created := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, map[string]any{"title": "Runner", "per_user_limit": 1,
		"start_at": start, "end_at": end, "items": []map[string]any{
			{"sku_id": 3801, "title": "EU 38", "price_cents": 700, "stock": 1},
			{"sku_id": 3802, "title": "EU 39", "price_cents": 800, "stock": 5}}})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	id := int64(created.Body["id"].(float64))
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", id)
	buy := func(user, sku int64, key string) *testenv.Response {
		var h []string
		if key != "" {
			h = []string{"Idempotency-Key", key}
		}
		return e.Do("POST", path, e.Token(user), map[string]any{"sku_id": sku}, h...)
	}
	var no string
	e.Eventually(10*time.Second, "the sale is preheated", func() error {
		r := buy(1, 3801, "")
		if r.Status != http.StatusAccepted {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		no = r.Str("order_no")
		return nil
	})
	refused := buy(2, 3801, "")
	testenv.RequireError(t, refused, http.StatusConflict, "SOLD_OUT", "")
	require.Equal(t, admission.LayerRedis, refused.Header.Get(api.HeaderLayer), "the script refuses the first")
	again := buy(3, 3801, "")
	testenv.RequireError(t, again, http.StatusConflict, "SOLD_OUT", "")
	require.Equal(t, api.LayerSoldOutMemory, again.Header.Get(api.HeaderLayer), "then memory answers")
	e.Eventually(5*time.Second, "a keyed loser is answered from memory once the watcher read EU 38 at zero", func() error {
		r := buy(4, 3801, testenv.KeyAt(time.Now()))
		if r.Status != http.StatusConflict || r.Header.Get(api.HeaderLayer) != api.LayerSoldOutMemory {
			return fmt.Errorf("%d %s %s", r.Status, r.Header.Get(api.HeaderLayer), r.Raw)
		}
		return nil
	})
	other := buy(5, 3802, testenv.KeyAt(time.Now()))
	require.Equal(t, http.StatusAccepted, other.Status, "EU 39 still sells: %s", other.Raw)

	e.WaitStatus(e.Token(1), no, 15*time.Second, seckill.StatusWaitPay)
	require.Equal(t, http.StatusAccepted, e.Do("POST", "/api/v1/orders/"+no+"/cancel", e.Token(1), nil).Status)
	e.WaitStatus(e.Token(1), no, 15*time.Second, seckill.StatusClosed)
	var resold string
	e.Eventually(10*time.Second, "the unit back on EU 38 lifts its flag and sells", func() error {
		r := buy(6, 3801, "")
		if r.Status != http.StatusAccepted {
			return fmt.Errorf("%d %s %s", r.Status, r.Header.Get(api.HeaderLayer), r.Raw)
		}
		resold = r.Str("order_no")
		return nil
	})
	e.WaitStatus(e.Token(6), resold, 15*time.Second, seckill.StatusWaitPay)
	e.WaitStatus(e.Token(5), other.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(id)
}
