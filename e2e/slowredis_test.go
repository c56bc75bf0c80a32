package e2e_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
)

// A slow Redis, not a dead one: at the start of a burst, the API's Redis
// replies are held back longer than its client's read timeout, so scripts
// run but their answers are lost. Each shopper clicks once (one
// Idempotency-Key) and retries 503s with that key, as the shop page does.
// Every 202 must be exactly one order of that shopper, every 409 must hold
// nothing, every 503 must resolve with its key to the truth, and the
// invariants must hold. (Before admission was idempotent, go-redis re-sent
// the script and the second run said LIMIT_EXCEEDED or SOLD_OUT while the
// first had reserved.)
func TestSlowRedisBurstTellsEveryShopperTheTruth(t *testing.T) {
	const stock, users = 12, 48
	x := testenv.StartToxi(t, "redis-api", "127.0.0.1:6379")
	e := testenv.New(t, testenv.Options{RedisAddr: x.Addr, RedisReadTimeout: 100 * time.Millisecond})
	sess := e.Session(stock, 1, 100)

	slow := x.Latency(300*time.Millisecond, 50*time.Millisecond)
	time.AfterFunc(1500*time.Millisecond, slow)

	type shopper struct {
		first, final *testenv.Response
		retries      int
	}
	shoppers := make([]shopper, users)
	var wg sync.WaitGroup
	for i := range shoppers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			user, key := int64(1000+i), uuid.NewString()
			r := e.BuyWithKey(sess.ID, user, key, 1)
			s := shopper{first: r}
			for ; r.Status == http.StatusServiceUnavailable && s.retries < 50; s.retries++ {
				if r.Header.Get("Retry-After") == "" {
					t.Errorf("503 without Retry-After: %s", r.Raw)
				}
				time.Sleep(200 * time.Millisecond)
				r = e.BuyWithKey(sess.ID, user, key, 1)
			}
			s.final = r
			shoppers[i] = s
		}()
	}
	wg.Wait()

	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	accepted, unknown := 0, 0
	for i, s := range shoppers {
		user := int64(1000 + i)
		if s.first.Status == http.StatusServiceUnavailable {
			unknown++
		}
		switch s.final.Status {
		case http.StatusAccepted:
			accepted++
			no := s.final.Str("order_no")
			e.WaitStatus(e.Token(user), no, 30*time.Second, seckill.StatusWaitPay)
			var n int
			var owner int64
			require.NoError(t, db.QueryRow("SELECT COUNT(*), COALESCE(MAX(user_id), 0) FROM orders WHERE order_no = ?", no).Scan(&n, &owner))
			require.Equal(t, 1, n, "order %s of user %d", no, user)
			require.Equal(t, user, owner)
		case http.StatusConflict:
			require.Contains(t, []string{"SOLD_OUT", "LIMIT_EXCEEDED"}, s.final.Str("code"))
		default:
			t.Fatalf("user %d: %d %s after %d retries", user, s.final.Status, s.final.Raw, s.retries)
		}
	}
	t.Logf("%d accepted, %d answered 503 first", accepted, unknown)

	// Nothing is held by a shopper who was told 409: no order, no reservation.
	holders := map[int64]int{} // units in orders and live reservations, by user
	rows, err := db.Query("SELECT user_id, quantity FROM orders WHERE session_id = ?", sess.ID)
	require.NoError(t, err)
	for rows.Next() {
		var u int64
		var q int
		require.NoError(t, rows.Scan(&u, &q))
		holders[u] += q
	}
	require.NoError(t, rows.Close())
	resv, err := e.Redis.HGetAll(t.Context(), fmt.Sprintf("%s:{s%d}:resv", e.Prefix, sess.ID)).Result()
	require.NoError(t, err)
	for _, raw := range resv {
		rec, err := redis.ParseReservationRecord(raw)
		require.NoError(t, err)
		if u := rec.UserID; holders[u] == 0 {
			holders[u] = 1 // a reservation that is no order (yet)
		}
	}
	for i, s := range shoppers {
		user := int64(1000 + i)
		if s.final.Status == http.StatusAccepted {
			require.Equal(t, 1, holders[user], "user %d was told 202", user)
		} else {
			require.Zero(t, holders[user], "user %d was told %d %s but holds units", user, s.final.Status, s.final.Str("code"))
		}
	}
	require.Equal(t, stock, accepted, "every unit went to a shopper who was told 202")
	e.Eventually(30*time.Second, "every reservation became an order", func() error {
		if r := e.Reconcile(sess.ID); r.InFlight != 0 {
			return fmt.Errorf("in flight: %d", r.InFlight)
		}
		return nil
	})
	e.RequireInvariants(sess.ID)
}
