package api_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

const keyHeader = api.HeaderIdempotencyKey

// buyWithKey sends one order request with an Idempotency-Key.

// The Idempotency-Key contract: the same key from the same shopper for the
// same session gets the same answer and order number for the whole sale:
// after a sell-out (the in-memory flag must not say SOLD_OUT), after the
// order closed, after the sale ended. Another body is 422; a bad key 400.
func TestIdempotencyKeyContract(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(2, 2, 100)
	tok := e.Token(1)

	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, strings.Repeat("k", 65), 1), 400, "INVALID_ARGUMENT", keyHeader)
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, "tab\there", 1), 400, "INVALID_ARGUMENT", keyHeader)

	key := "click-" + e.Prefix
	first := e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Raw)
	no := first.Str("order_no")
	again := e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
	require.Equal(t, no, again.Str("order_no"))
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, key, 2), 422, seckill.EIDEMPOTENCY, "another request body")

	// Someone else buys the rest: the process flags the session sold out.
	require.Equal(t, http.StatusAccepted, e.BuyWithKey(sess.ID, 2, key, 1).Status, "another shopper's key is theirs")
	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(3), nil)
	testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
	require.Equal(t, api.LayerSoldOutMemory, r.Header.Get(api.HeaderLayer))
	again = e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "a key holding a reservation is never told SOLD_OUT: %s", again.Raw)
	require.Equal(t, no, again.Str("order_no"))
	// A fresh key (no time in it) while the session is flagged sold out:
	// refused, and nothing stored; it never turns into a purchase.
	fresh := e.BuyWithKey(sess.ID, 4, "fresh-"+e.Prefix, 1)
	testenv.RequireError(t, fresh, 409, "SOLD_OUT", "sold out")
	require.Equal(t, admission.LayerRedis, fresh.Header.Get(api.HeaderLayer), "a key that may hold a reservation is looked up, not refused by the flag")

	// The order closes: the key still names it; the unit is back, yet the
	// key refused SOLD_OUT stays refused (a new key buys it).
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	require.Equal(t, http.StatusAccepted, e.Do("POST", "/api/v1/orders/"+no+"/cancel", tok, nil).Status)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusClosed)
	again = e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
	require.Equal(t, no, again.Str("order_no"))
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 4, "fresh-"+e.Prefix, 1), 409, "SOLD_OUT", "sold out")

	// The sale ends: the key still names it; a new key is ENDED.
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	_, err = db.Exec("UPDATE sessions SET end_at = ? WHERE id = ?", time.Now().UTC().Add(-time.Second), sess.ID)
	require.NoError(t, err)
	e.Eventually(5*time.Second, "the session ends", func() error {
		// A quantity that cannot be bought: 400 until the API sees the end.
		if r := e.BuyWithKey(sess.ID, 1, "late-"+e.Prefix, 99); r.Status != http.StatusGone {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		return nil
	})
	again = e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
	require.Equal(t, no, again.Str("order_no"))
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, key, 2), 422, seckill.EIDEMPOTENCY, "another request body")

	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM orders WHERE session_id = ? AND user_id = 1", sess.ID).Scan(&n))
	require.Equal(t, 1, n, "one key, one order")
	e.RequireInvariants(sess.ID)
}

// Which refusals hold: the script's decisions (SOLD_OUT, LIMIT_EXCEEDED)
// do; refusals before it ran (rate limits here) do not, and the retry with
// the key runs afresh. A ticket is consumed by its key:
// the retry with the same key and ticket passes, another key does not.
func TestIdempotencyKeyPinsOnlyDecisions(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{User: 1}})
	sess := e.Session(5, 1, 100)
	require.Equal(t, http.StatusAccepted, e.BuyWithKey(sess.ID, 1, "a-"+e.Prefix, 1).Status)
	limited := e.BuyWithKey(sess.ID, 1, "b-"+e.Prefix, 1)
	require.Equal(t, http.StatusTooManyRequests, limited.Status, "%s", limited.Raw)
	e.Eventually(3*time.Second, "the rate limit lets the key run", func() error {
		r := e.BuyWithKey(sess.ID, 1, "b-"+e.Prefix, 1)
		if r.Status == http.StatusTooManyRequests {
			return fmt.Errorf("%s", r.Raw)
		}
		testenv.RequireError(t, r, 409, "LIMIT_EXCEEDED", "per shopper")
		return nil
	})
	time.Sleep(time.Second)
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, "b-"+e.Prefix, 1), 409, "LIMIT_EXCEEDED", "per shopper")
}

// A session with purchase tickets: the retry of one purchase (same key,
// same ticket) is not refused as "ticket already used".
func TestIdempotencyKeyWithTicket(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	end := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	c := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, map[string]any{"sku_id": 1, "title": "t",
		"price_cents": 10, "stock": 5, "per_user_limit": 2, "start_at": start, "end_at": end, "require_ticket": true})
	require.Equal(t, http.StatusCreated, c.Status, "%s", c.Raw)
	id := int64(c.Body["id"].(float64))
	require.Equal(t, 200, e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/preheat", id), testenv.AdminToken, nil).Status)
	tok := e.Token(1)
	ticket := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/ticket", id), tok, nil).Str("ticket")
	require.NotEmpty(t, ticket)
	buy := func(key string) *testenv.Response {
		return e.Do("POST", testenv.OrdersPath(id), tok, nil, admission.TicketHeader, ticket, keyHeader, key)
	}
	a := buy("k1-" + e.Prefix)
	require.Equal(t, http.StatusAccepted, a.Status, "%s", a.Raw)
	b := buy("k1-" + e.Prefix)
	require.Equal(t, http.StatusAccepted, b.Status, "%s", b.Raw)
	require.Equal(t, a.Str("order_no"), b.Str("order_no"))
	testenv.RequireError(t, buy("k2-"+e.Prefix), 403, "FORBIDDEN", "already used")
	require.Equal(t, 4, e.Reconcile(id).RedisStock)
}

// countStarts counts the workflow starts the API asks for.
type countStarts struct {
	app.APIFlow
	n *atomic.Int32
}

func (f countStarts) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	f.n.Add(1)
	return f.APIFlow.Start(ctx, req)
}

// A replay of a key whose order has started (its pending-start entry is
// gone) never asks Temporal to start it again: a start after Temporal's
// retention would make a second workflow for a settled order.
// Both paths replay: the script (stock left) and the pin lookup of a
// session flagged sold out.
func TestIdempotencyReplayNeverRestartsAStartedOrder(t *testing.T) {
	for _, stock := range []int{2, 1} {
		t.Run(fmt.Sprintf("stock %d", stock), func(t *testing.T) { replayNeverRestarts(t, stock) })
	}
}

func replayNeverRestarts(t *testing.T, stock int) {
	var starts atomic.Int32
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { return countStarts{f, &starts} }})
	sess := e.Session(stock, 1, 100)
	key := "once-" + e.Prefix
	first := e.BuyWithKey(sess.ID, 1, key, 1)
	require.Equal(t, http.StatusAccepted, first.Status, "%s", first.Raw)
	no := first.Str("order_no")
	e.WaitStatus(e.Token(1), no, 20*time.Second, seckill.StatusWaitPay)
	e.Eventually(10*time.Second, "the pending-start entry is cleared", func() error {
		if n, _, err := e.Gate.PendingStats(context.Background(), sess.ID); err != nil || n != 0 {
			return fmt.Errorf("%d pending (%v)", n, err)
		}
		return nil
	})
	before := starts.Load()
	for range 3 {
		again := e.BuyWithKey(sess.ID, 1, key, 1)
		require.Equal(t, http.StatusAccepted, again.Status, "%s", again.Raw)
		require.Equal(t, no, again.Str("order_no"))
	}
	require.Equal(t, before, starts.Load(), "a replay started the order's workflow again")
	e.RequireInvariants(sess.ID)
}

// A pause does not take back an answer: the retry of a key that holds a
// reservation gets its 202 and order again while the sale is PAUSED (the
// shopper must not believe they lost while their order waits for its
// payment), and a key that was refused (nothing stored for it) or is new is
// told PAUSED. The pause's own key reused for another change is refused.
func TestKeyRetryWhilePaused(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 100)
	won := e.BuyWithKey(sess.ID, 1, "won-"+e.Prefix, 1)
	require.Equal(t, http.StatusAccepted, won.Status, "%s", won.Raw)
	lost := e.BuyWithKey(sess.ID, 2, "lost-"+e.Prefix, 1)
	testenv.RequireError(t, lost, 409, "SOLD_OUT", "")

	pause := fmt.Sprintf("/admin/v1/sessions/%d/pause", sess.ID)
	r := e.Do("POST", pause, testenv.AdminToken, nil, "Idempotency-Key", "pause-"+e.Prefix)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	again := e.BuyWithKey(sess.ID, 1, "won-"+e.Prefix, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "paused, the key's order is still its answer: %s", again.Raw)
	require.Equal(t, won.Str("order_no"), again.Str("order_no"))
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 2, "lost-"+e.Prefix, 1), 423, "PAUSED", "paused")
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 3, "new-"+e.Prefix, 1), 423, "PAUSED", "paused")

	// The pause's key reused for stock: refused, nothing added anywhere.
	stock := fmt.Sprintf("/admin/v1/sessions/%d/stock", sess.ID)
	testenv.RequireError(t, e.Do("POST", stock, testenv.AdminToken, map[string]int{"add": 100}, "Idempotency-Key", "pause-"+e.Prefix),
		422, seckill.EIDEMPOTENCY, "pause")
	e.WaitStatus(e.Token(1), won.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.TotalStock, "no unit added by the refused change")
	require.Zero(t, rep.RedisStock)
}

// After a sell-out, keyed losers are answered like unkeyed ones: a key
// stamped after the last keyed win (beyond the clock skew) from memory; an
// older one from memory too once the sale's holders are read, unless its
// shopper holds units; a holder's older key and one without a time from
// its pin (one read); and none stores anything. The winner's key still
// gets its order; a refused key stays refused after the unit comes back,
// which a new key then buys.
func TestKeyedLosersFromMemory(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(1, 1, 100)
	tok := e.Token(1)
	winKey := testenv.KeyAt(time.Now())
	won := e.BuyWithKey(sess.ID, 1, winKey, 1)
	require.Equal(t, http.StatusAccepted, won.Status, "%s", won.Raw)
	no := won.Str("order_no")
	early, winnersOther := testenv.KeyAt(time.Now()), testenv.KeyAt(time.Now())
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 2, early, 1), 409, "SOLD_OUT", "sold out")

	time.Sleep(seckill.KeyClockSkew)
	var memoryKey string
	e.Eventually(5*time.Second, "a new keyed loser is answered from memory", func() error {
		memoryKey = testenv.KeyAt(time.Now())
		r := e.BuyWithKey(sess.ID, 3, memoryKey, 1)
		testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
		if l := r.Header.Get(api.HeaderLayer); l != api.LayerSoldOutMemory {
			return fmt.Errorf("answered by %s", l)
		}
		return nil
	})
	e.Eventually(5*time.Second, "an early key of a shopper who holds nothing is answered from memory", func() error {
		r := e.BuyWithKey(sess.ID, 2, early, 1)
		testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
		if l := r.Header.Get(api.HeaderLayer); l != api.LayerSoldOutMemory {
			return fmt.Errorf("answered by %s", l)
		}
		return nil
	})
	// The shopper the token names decides before its check, so a forged
	// token hears SOLD_OUT whoever it names, the holder too: it cannot
	// tell holders from the others. An expired token of ours naming the
	// holder is refused 401 (the winner signs in again and hears its
	// order); one naming a shopper who holds nothing hears SOLD_OUT.
	for _, user := range []int64{1, 2} {
		forged := e.Token(user)
		forged = forged[:len(forged)-4] + "AAAA"
		r := e.Do("POST", testenv.OrdersPath(sess.ID), forged, map[string]int{"quantity": 1}, "Idempotency-Key", early)
		testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
		require.Equal(t, api.LayerSoldOutMemory, r.Header.Get(api.HeaderLayer), "a forged token naming shopper %d", user)
	}
	for user, status := range map[int64]int{1: 401, 2: 409} {
		expired, err := auth.IssueToken(testenv.JWTSecret, user, -time.Minute, time.Now())
		require.NoError(t, err)
		r := e.Do("POST", testenv.OrdersPath(sess.ID), expired, map[string]int{"quantity": 1}, "Idempotency-Key", early)
		require.Equal(t, status, r.Status, "an expired token naming shopper %d: %s", user, r.Raw)
	}
	for _, c := range []struct {
		user int64
		key  string
		code string
	}{
		{2, "not-a-uuid-" + e.Prefix, "SOLD_OUT"},
		{1, winnersOther, "LIMIT_EXCEEDED"}, // a holder's
	} {
		r := e.BuyWithKey(sess.ID, c.user, c.key, 1)
		testenv.RequireError(t, r, 409, c.code, "")
		require.Equal(t, admission.LayerRedis, r.Header.Get(api.HeaderLayer), "a key that may have won is looked up: %s", c.key)
	}
	again := e.BuyWithKey(sess.ID, 1, winKey, 1)
	require.Equal(t, http.StatusAccepted, again.Status, "the winner's key is never told SOLD_OUT: %s", again.Raw)
	require.Equal(t, no, again.Str("order_no"))
	idem, err := e.Redis.HLen(context.Background(), fmt.Sprintf("%s:{s%d}:idem", e.Prefix, sess.ID)).Result()
	require.NoError(t, err)
	require.EqualValues(t, 4, idem, "the winner's order and key, and the stamps (last keyed win, limit): no loser")

	// The order is cancelled: the unit is back. Every refused key stays
	// refused; a key stamped after the return buys it.
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	require.Equal(t, http.StatusAccepted, e.Do("POST", "/api/v1/orders/"+no+"/cancel", tok, nil).Status)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusClosed)
	for user, k := range map[int64]string{2: early, 3: memoryKey} {
		testenv.RequireError(t, e.BuyWithKey(sess.ID, user, k, 1), 409, "SOLD_OUT", "sold out")
	}
	time.Sleep(seckill.KeyClockSkew)
	fresh := e.BuyWithKey(sess.ID, 3, testenv.KeyAt(time.Now()), 1)
	require.Equal(t, http.StatusAccepted, fresh.Status, "%s", fresh.Raw)
	e.WaitStatus(e.Token(3), fresh.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// A refused key hears the same refusal whichever part answers it: the
// script before the sell-out, its pin's lookup after it. A shopper at the
// limit hears LIMIT_EXCEEDED on the retry too, not SOLD_OUT; one who
// heard SOLD_OUT hears it again after their own order came and went.
func TestRefusedKeyHearsTheSameRefusal(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(2, 1, 100)
	won := e.BuyWithKey(sess.ID, 1, "won-"+e.Prefix, 1)
	require.Equal(t, http.StatusAccepted, won.Status, "%s", won.Raw)
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, "over-"+e.Prefix, 1), 409, "LIMIT_EXCEEDED", "per shopper")
	last := e.BuyWithKey(sess.ID, 2, "last-"+e.Prefix, 1)
	require.Equal(t, http.StatusAccepted, last.Status)
	testenv.RequireError(t, e.BuyWithKey(sess.ID, 3, "lost-"+e.Prefix, 1), 409, "SOLD_OUT", "sold out")
	e.Eventually(5*time.Second, "the sold-out flag is confirmed: keyed requests are looked up", func() error {
		r := e.BuyWithKey(sess.ID, 4, "probe-"+e.Prefix, 1)
		testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
		if r.Header.Get(api.HeaderLayer) != admission.LayerRedis {
			return fmt.Errorf("answered by %s", r.Header.Get(api.HeaderLayer))
		}
		return nil
	})
	for range 2 {
		testenv.RequireError(t, e.BuyWithKey(sess.ID, 1, "over-"+e.Prefix, 1), 409, "LIMIT_EXCEEDED", "per shopper")
		testenv.RequireError(t, e.BuyWithKey(sess.ID, 3, "lost-"+e.Prefix, 1), 409, "SOLD_OUT", "sold out")
	}
	// Both orders exist before the invariants are checked (none in flight).
	e.WaitStatus(e.Token(1), won.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	e.WaitStatus(e.Token(2), last.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// Units an operator adds to a sale that never ran short reopen nothing: a
// key that carries no time (a third-party client's), counted older than
// everything, still buys while stock lasts, as it did before the add; in a
// sale of sizes too. Only units back on a sale that ran short keep such
// keys refused (TestRefusedKeyStaysRefused).
func TestStockAddedBeforeAShortageReopensNothing(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	add := func(id int64, request string, body map[string]any) {
		t.Helper()
		r := e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/stock", id), testenv.AdminToken, body, keyHeader, request)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	}
	accepted := map[string]int64{} // order number → its shopper
	won := func(user int64, r *testenv.Response) {
		t.Helper()
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
		accepted[r.Str("order_no")] = user
	}

	one := e.Session(3, 2, 100)
	add(one.ID, "add-1", map[string]any{"add": 2})
	won(1, e.BuyWithKey(one.ID, 1, "client-order-1", 1))
	// Sold out, then two units added: a key refused then stays refused.
	for _, u := range []int64{3, 4} {
		won(u, e.BuyWithKey(one.ID, u, "", 2))
	}
	testenv.RequireError(t, e.BuyWithKey(one.ID, 5, "client-order-5", 1), http.StatusConflict, "SOLD_OUT", "")
	add(one.ID, "add-2", map[string]any{"add": 2})
	testenv.RequireError(t, e.BuyWithKey(one.ID, 5, "client-order-5", 1), http.StatusConflict, "SOLD_OUT", "")
	won(6, e.BuyWithKey(one.ID, 6, "", 1))

	now := time.Now().UTC()
	created := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, map[string]any{"title": "Runner", "per_user_limit": 2,
		"start_at": now.Add(-time.Second).Format(time.RFC3339), "end_at": now.Add(time.Hour).Format(time.RFC3339),
		"items": []map[string]any{
			{"sku_id": 3801, "title": "EU 38", "price_cents": 700, "stock": 2},
			{"sku_id": 3802, "title": "EU 39", "price_cents": 800, "stock": 3}}})
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	sizes := int64(created.Body["id"].(float64))
	pre := e.Do("POST", fmt.Sprintf("/admin/v1/sessions/%d/preheat", sizes), testenv.AdminToken, nil)
	require.Equal(t, http.StatusOK, pre.Status, "%s", pre.Raw)
	add(sizes, "add-3801", map[string]any{"add": 3, "sku_id": 3801})
	won(2, e.Do("POST", testenv.OrdersPath(sizes), e.Token(2), map[string]any{"sku_id": 3801, "quantity": 1}, keyHeader, "client-order-2"))

	for no, user := range accepted {
		e.WaitStatus(e.Token(user), no, 15*time.Second, seckill.StatusWaitPay)
	}
	e.RequireInvariants(one.ID)
	e.RequireInvariants(sizes)
}
