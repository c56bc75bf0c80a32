package api_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A reserved sale (预约) through the HTTP API, as a shop runs one: shoppers
// register before the start (again: the same answer), bad requests change
// nothing, and at the start a burst of shoppers who never registered hears
// 403 NOT_ELIGIBLE without moving a unit while the registrants buy the
// stock; the invariants hold.
func TestReservedSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := e.OperatorToken("ana", seckill.RoleAdmin)
	start := time.Now().Add(4 * time.Second).Truncate(time.Second)
	sale := func(extra map[string]any) map[string]any {
		b := map[string]any{"sku_id": 1, "title": "Launch", "price_cents": 900, "stock": 5, "per_user_limit": 1,
			"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339), "mode": "reserved"}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	for name, c := range map[string]struct {
		body map[string]any
		msg  string
	}{
		"unknown mode":              {sale(map[string]any{"mode": "lottery"}), "mode must be"},
		"closes after the start":    {sale(map[string]any{"register_until": start.Add(time.Minute).Format(time.RFC3339)}), "no later than start_at"},
		"window backwards":          {sale(map[string]any{"register_from": start.Format(time.RFC3339), "register_until": start.Add(-time.Hour).Format(time.RFC3339)}), "after register_from"},
		"not a time":                {sale(map[string]any{"register_from": "tomorrow"}), "register_from"},
		"a window without the mode": {sale(map[string]any{"mode": "first_come", "register_until": start.Format(time.RFC3339)}), "need mode reserved"},
	} {
		testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, c.body), 400, "INVALID_ARGUMENT", c.msg)
		_ = name
	}
	created := e.Do("POST", "/admin/v1/sessions", admin, sale(nil))
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	require.Equal(t, "reserved", created.Str("mode"))
	require.Equal(t, start.UTC().Format(time.RFC3339), created.Str("register_until"), "the window closes at the start by default")
	id := int64(created.Body["id"].(float64))
	base := fmt.Sprintf("/api/v1/sessions/%d", id)

	const registrants = 8
	for u := int64(1); u <= registrants; u++ {
		res := e.Do("POST", base+"/registrations", e.Token(u), nil)
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.Equal(t, "REGISTERED", res.Str("status"))
	}
	again := e.Do("POST", base+"/registrations", e.Token(1), nil)
	require.Equal(t, http.StatusOK, again.Status, "a second registration is the same one")
	require.Equal(t, "REGISTERED", e.Do("GET", base+"/registration", e.Token(1), nil).Str("status"))
	testenv.RequireError(t, e.Do("GET", base+"/registration", e.Token(99), nil), 404, "NOT_FOUND", "not registered")
	testenv.RequireError(t, e.Do("POST", base+"/registrations", "", nil), 401, "UNAUTHENTICATED", "")
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(2), `{"x":1}`), 400, "INVALID_ARGUMENT", "")
	testenv.RequireError(t, e.Do("POST", "/api/v1/sessions/987654/registrations", e.Token(2), nil), 404, "NOT_FOUND", "")
	firstCome := e.Session(5, 1, 100)
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/registrations", firstCome.ID), e.Token(2), nil),
		409, "CONFLICT", "takes no registrations")
	testenv.RequireError(t, e.BuyWithKey(id, 1, "", 1), 425, "NOT_STARTED", "")

	time.Sleep(time.Until(start))
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(50), nil), 409, "CONFLICT", "closed")

	// The start. First a wave of 100 shoppers who never registered: each
	// hears NOT_ELIGIBLE, and not a unit moves.
	won := map[string]int64{} // order number → its shopper
	burst := func(users []int64) map[string]int {
		var mu sync.Mutex
		answers := map[string]int{}
		var wg sync.WaitGroup
		for _, user := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := e.Do("POST", base+"/orders", e.Token(user), nil)
				who := "registrant"
				if user > registrants {
					who = "stranger"
				}
				mu.Lock()
				defer mu.Unlock()
				answers[fmt.Sprintf("%s %d %s", who, res.Status, res.Str("code"))]++
				if res.Status == http.StatusAccepted {
					won[res.Str("order_no")] = user
				}
			}()
		}
		wg.Wait()
		return answers
	}
	var strangers []int64
	for u := int64(1001); u <= 1100; u++ {
		strangers = append(strangers, u)
	}
	require.Equal(t, map[string]int{"stranger 403 NOT_ELIGIBLE": 100}, burst(strangers))
	require.EqualValues(t, 5, e.Do("GET", base, "", nil).Body["remaining_stock"], "the strangers moved no stock")

	// Then the registrants, with the strangers again: the registrants buy
	// the stock; a stranger never does (NOT_ELIGIBLE, or SOLD_OUT from an
	// API that has seen the sell-out and answers from memory).
	var all []int64
	for u := int64(1); u <= registrants; u++ {
		all = append(all, u)
	}
	answers := burst(append(all, strangers...))
	require.Equal(t, 5, answers["registrant 202 "], "%v", answers)
	require.Equal(t, 3, answers["registrant 409 SOLD_OUT"], "%v", answers)
	require.Equal(t, 100, answers["stranger 403 NOT_ELIGIBLE"]+answers["stranger 409 SOLD_OUT"], "%v", answers)
	for no, user := range won {
		e.WaitStatus(e.Token(user), no, 20*time.Second, seckill.StatusWaitPay)
	}
	rep := e.RequireInvariants(id)
	require.Equal(t, 0, rep.RedisStock)
}

// A draw sale through the HTTP API: created with mode draw (rights last
// right_ttl_seconds, 600 by default) by an API that holds no draw key, it
// publishes the commitment to its seed once the worker sealed one, and
// never the seed; registration opens with the commitment; a registrant is
// REGISTERED until the draw; right_ttl_seconds belongs to draws only.
func TestDrawSaleCreation(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := e.OperatorToken("ana", seckill.RoleAdmin)
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	body := map[string]any{"sku_id": 1, "title": "Draw", "price_cents": 900, "stock": 5, "per_user_limit": 1,
		"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339), "mode": "draw"}
	created := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	require.Equal(t, "draw", created.Str("mode"))
	require.EqualValues(t, 600, created.Body["right_ttl_seconds"])
	require.NotContains(t, created.Body, "draw_seed", "the seed is secret until the draw")
	id := int64(created.Body["id"].(float64))
	base := fmt.Sprintf("/api/v1/sessions/%d", id)
	commitment := e.WaitCommitted(id)
	require.Len(t, commitment, 64)
	shown := e.Do("GET", base, "", nil)
	require.Equal(t, commitment, shown.Str("draw_commitment"), "%s", shown.Raw)
	require.NotContains(t, shown.Body, "draw_seed")
	require.Equal(t, http.StatusCreated, e.Do("POST", base+"/registrations", e.Token(1), nil).Status)
	require.Equal(t, "REGISTERED", e.Do("GET", base+"/registration", e.Token(1), nil).Str("status"), "not drawn yet")

	body["right_ttl_seconds"] = 30
	short := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, short.Status, "%s", short.Raw)
	require.EqualValues(t, 30, short.Body["right_ttl_seconds"])
	body["mode"] = "first_come"
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, body), 400, "INVALID_ARGUMENT", "right_ttl_seconds needs mode draw")
}

// A draw's right buys one unit: a draw's per_user_limit is 1 (left out, it
// is 1), and a draw created or changed to more is refused like any
// invalid sale, changing nothing; a sale turned into a draw takes 1.
func TestDrawBuysOneUnitEach(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	admin := e.OperatorToken("ana", seckill.RoleAdmin)
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	body := map[string]any{"sku_id": 1, "title": "Draw", "price_cents": 900, "stock": 5, "per_user_limit": 2,
		"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339), "mode": "draw"}
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", admin, body), 400, "INVALID_ARGUMENT", "per_user_limit must be 1")
	delete(body, "per_user_limit")
	created := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	require.EqualValues(t, 1, created.Body["per_user_limit"])
	path := fmt.Sprintf("/admin/v1/sessions/%.0f", created.Body["id"])
	testenv.RequireError(t, e.Do("PATCH", path, admin, map[string]any{"per_user_limit": 3}), 400, "INVALID_ARGUMENT", "per_user_limit must be 1")
	require.EqualValues(t, 1, e.Do("GET", "/api"+path[len("/admin"):], "", nil).Body["per_user_limit"], "changed nothing")

	body["mode"], body["per_user_limit"] = "first_come", 3
	fc := e.Do("POST", "/admin/v1/sessions", admin, body)
	require.Equal(t, http.StatusCreated, fc.Status, "%s", fc.Raw)
	fcPath := fmt.Sprintf("/admin/v1/sessions/%.0f", fc.Body["id"])
	testenv.RequireError(t, e.Do("PATCH", fcPath, admin, map[string]any{"mode": "draw", "per_user_limit": 2}), 400, "INVALID_ARGUMENT", "per_user_limit must be 1")
	drawn := e.Do("PATCH", fcPath, admin, map[string]any{"mode": "draw"})
	require.Equal(t, http.StatusOK, drawn.Status, "%s", drawn.Raw)
	got := drawn.Body["session"].(map[string]any)
	require.Equal(t, "draw", got["mode"])
	require.EqualValues(t, 1, got["per_user_limit"])
}

// A sale's mode is fixed once it is preheated: the preheat loaded what the
// mode needs and the session's workflow decides by it. Before, it changes;
// after, a change of mode is 409 CONFLICT and changes nothing, while the
// rest of an upcoming sale still changes.
func TestModeFixedOncePreheated(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	admin := e.OperatorToken("ana", seckill.RoleAdmin)
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	created := e.Do("POST", "/admin/v1/sessions", admin, map[string]any{"sku_id": 1, "title": "Sale", "price_cents": 900,
		"stock": 5, "per_user_limit": 1, "start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339)})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	path := fmt.Sprintf("/admin/v1/sessions/%.0f", created.Body["id"])
	r := e.Do("PATCH", path, admin, map[string]any{"mode": "draw", "register_from": start.Add(-time.Minute).Format(time.RFC3339)})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	r = e.Do("PATCH", path, admin, map[string]any{"mode": "first_come"})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	require.Equal(t, http.StatusOK, e.Do("POST", path+"/preheat", admin, nil).Status)
	for _, mode := range []string{"draw", "reserved"} {
		testenv.RequireError(t, e.Do("PATCH", path, admin, map[string]any{"mode": mode,
			"register_from": start.Add(-time.Minute).Format(time.RFC3339)}), 409, "CONFLICT", "preheated")
	}
	shown := e.Do("GET", "/api"+path[len("/admin"):], "", nil)
	require.Equal(t, "first_come", shown.Str("mode"), "changed nothing")
	require.NotEmpty(t, shown.Str("preheated_at"))
	r = e.Do("PATCH", path, admin, map[string]any{"title": "Sale, renamed", "mode": "first_come"})
	require.Equal(t, http.StatusOK, r.Status, "the same mode and the rest still change: %s", r.Raw)
}

// A reserved sale of sizes through the HTTP API: a registration names its
// size (required, and one it sells), once per shopper per sale (another
// size later is CONFLICT, the first stands); at the start a registrant
// buys the size registered for, not another, and each size sells its own
// stock among its registrants; the invariants hold per size.
func TestReservedSaleOfSizes(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	admin := e.OperatorToken("ana", seckill.RoleAdmin)
	start := time.Now().Add(4 * time.Second).Truncate(time.Second)
	created := e.Do("POST", "/admin/v1/sessions", admin, map[string]any{"title": "Sneaker", "per_user_limit": 1,
		"items": []map[string]any{{"sku_id": 38, "title": "EU 38", "price_cents": 700, "stock": 2},
			{"sku_id": 39, "title": "EU 39", "price_cents": 800, "stock": 1}},
		"start_at": start.Format(time.RFC3339), "end_at": start.Add(time.Hour).Format(time.RFC3339), "mode": "reserved"})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	id := int64(created.Body["id"].(float64))
	base := fmt.Sprintf("/api/v1/sessions/%d", id)

	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(1), nil), 400, "INVALID_ARGUMENT", "sku_id is required")
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(1), `{"sku_id": 77}`), 400, "INVALID_ARGUMENT", "no item with sku_id 77")
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(1), `{"sku_id": "38"}`), 400, "INVALID_ARGUMENT", "")
	size := map[int64]int64{1: 38, 2: 38, 3: 38, 4: 38, 5: 39, 6: 39}
	for u := int64(1); u <= 6; u++ {
		res := e.Do("POST", base+"/registrations", e.Token(u), map[string]any{"sku_id": size[u]})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		require.EqualValues(t, size[u], res.Body["sku_id"])
	}
	again := e.Do("POST", base+"/registrations", e.Token(1), map[string]any{"sku_id": 38})
	require.Equal(t, http.StatusOK, again.Status, "the same registration again")
	testenv.RequireError(t, e.Do("POST", base+"/registrations", e.Token(1), map[string]any{"sku_id": 39}), 409, "CONFLICT",
		"registered for sku_id 38")
	mine := e.Do("GET", base+"/registration", e.Token(1), nil)
	require.Equal(t, "REGISTERED", mine.Str("status"))
	require.EqualValues(t, 38, mine.Body["sku_id"], "the first registration stands")

	time.Sleep(time.Until(start))
	testenv.RequireError(t, e.Do("POST", base+"/orders", e.Token(5), map[string]any{"sku_id": 38}), 403, "NOT_ELIGIBLE", "item 38")
	var mu sync.Mutex
	answers := map[string]int{}
	won := map[string]int64{}
	var wg sync.WaitGroup
	for u := int64(1); u <= 6; u++ {
		wg.Go(func() {
			res := e.Do("POST", base+"/orders", e.Token(u), map[string]any{"sku_id": size[u]})
			mu.Lock()
			defer mu.Unlock()
			answers[fmt.Sprintf("%d %d %s", size[u], res.Status, res.Str("code"))]++
			if res.Status == http.StatusAccepted {
				won[res.Str("order_no")] = u
			}
		})
	}
	wg.Wait()
	require.Equal(t, map[string]int{"38 202 ": 2, "38 409 SOLD_OUT": 2, "39 202 ": 1, "39 409 SOLD_OUT": 1}, answers)
	for no, user := range won {
		e.WaitStatus(e.Token(user), no, 20*time.Second, seckill.StatusWaitPay)
		o := e.Do("GET", "/api/v1/orders/"+no, e.Token(user), nil)
		require.EqualValues(t, size[user], o.Body["sku_id"], "the order is for the size registered for: %s", o.Raw)
	}
	rep := e.RequireInvariants(id)
	require.Equal(t, 0, rep.RedisStock)
}
