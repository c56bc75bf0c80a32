package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

// A MySQL outage is 503 UNAVAILABLE with Retry-After, like Redis's: for the
// admin's writes, for an order lookup that falls through to MySQL and for an
// unknown session; never a 500, and never remembered as "not found". When
// MySQL is back the same requests succeed with no restart.
func TestMySQLOutageIsUnavailable(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	x := testenv.StartToxi(t, "mysql", "127.0.0.1:3306")
	cfg, err := mysqldriver.ParseDSN(e.DSN)
	require.NoError(t, err)
	cfg.Addr, cfg.Timeout = x.Addr, time.Second
	db, err := mysql.Open(context.Background(), cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	serve(t, e, newServer(t, e, app.APIConfig{}, db))
	tok := e.Token(1)

	now := time.Now().UTC()
	body := map[string]any{"sku_id": 1, "title": "t", "price_cents": 100, "stock": 3, "per_user_limit": 1,
		"start_at": now.Add(time.Hour).Format(time.RFC3339), "end_at": now.Add(2 * time.Hour).Format(time.RFC3339)}
	created := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, body)
	require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
	unknownOrder := fmt.Sprintf("%d-%032x", int64(created.Body["id"].(float64)), 7)

	x.SetDown(true)
	for _, r := range []*testenv.Response{
		e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, body),
		e.Do("GET", "/api/v1/orders/"+unknownOrder, tok, nil),
		e.Do("GET", "/api/v1/sessions/424242", "", nil),
	} {
		testenv.RequireError(t, r, http.StatusServiceUnavailable, seckill.EUNAVAILABLE, "unavailable")
		secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After")
		require.GreaterOrEqual(t, secs, 1)
	}
	require.Equal(t, http.StatusServiceUnavailable, e.Do("GET", "/readyz", "", nil).Status)

	x.SetDown(false)
	e.Eventually(10*time.Second, "the API heals", func() error {
		if r := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, body); r.Status != http.StatusCreated {
			return fmt.Errorf("%d %s", r.Status, r.Raw)
		}
		return nil
	})
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders/"+unknownOrder, tok, nil), http.StatusNotFound, seckill.ENOTFOUND, "not found")
	testenv.RequireError(t, e.Do("GET", "/api/v1/sessions/424242", "", nil), http.StatusNotFound, seckill.ENOTFOUND, "not found")
}

// With the API's Redis away, an order that exists in Redis alone (QUEUED:
// no worker here creates its row) is unknown, not "not found": its
// payment webhook and its poll answer 503, so the provider redelivers
// instead of dropping the payment; with Redis back the webhook is taken.
func TestQueuedOrderWhileRedisIsAwayIsUnavailable(t *testing.T) {
	testenv.SkipShort(t, "MariaDB, Redis and the Temporal dev server")
	x := testenv.StartToxi(t, "redis-"+t.Name(), "127.0.0.1:6379")
	e := testenv.New(t, testenv.Options{NoWorker: true, RedisAddr: x.Addr, RedisReadTimeout: 200 * time.Millisecond})
	sess := e.Session(1, 1, 300)
	tok := e.Token(1)
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")

	x.SetDown(true)
	testenv.RequireError(t, e.Pay(no, "pay_"+no, "evt_"+no, 300), 503, "UNAVAILABLE", "")
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders/"+no, tok, nil), 503, "UNAVAILABLE", "")
	x.SetDown(false)
	e.Eventually(10*time.Second, "the webhook is taken once Redis is back", func() error {
		if p := e.Pay(no, "pay_"+no, "evt_"+no, 300); p.Status != http.StatusOK {
			return fmt.Errorf("%d %s", p.Status, p.Raw)
		}
		return nil
	})
}
