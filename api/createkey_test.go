package api_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// POST /admin/v1/sessions honours Idempotency-Key: retries with the key
// and the same body (reordered, respaced) get the one sale it created, even
// when they race; the key with another body is 422 and creates nothing.
func TestCreateSessionIdempotencyKey(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	key := fmt.Sprintf("create-%d", time.Now().UnixNano())
	start := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	end := time.Now().UTC().Add(2 * time.Hour).Format(time.RFC3339)
	body := fmt.Sprintf(`{"sku_id": 41, "title": %q, "price_cents": 500, "stock": 4, "per_user_limit": 1, "start_at": %q, "end_at": %q}`, key, start, end)
	reordered := fmt.Sprintf(`{"end_at":%q,"start_at":%q,"title":%q,"sku_id":41,"stock":4,"price_cents":500,"per_user_limit":1}`, end, start, key)

	const racers = 8
	ids := make([]float64, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := body
			if i%2 == 1 {
				b = reordered
			}
			r := e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, b, "Idempotency-Key", key)
			if r.Status != http.StatusCreated {
				t.Errorf("create %d: %d %s", i, r.Status, r.Raw)
				return
			}
			ids[i] = r.Body["id"].(float64)
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id, "one key, one sale")
	}

	other := fmt.Sprintf(`{"sku_id": 41, "title": %q, "price_cents": 600, "stock": 4, "per_user_limit": 1, "start_at": %q, "end_at": %q}`, key, start, end)
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, other, "Idempotency-Key", key),
		422, seckill.EIDEMPOTENCY, "another body")

	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer db.Close()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sessions WHERE title = ?", key).Scan(&n))
	require.Equal(t, 1, n, "the retries and the mismatch created nothing more")
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM session_audit WHERE session_id = ? AND action = 'create'", int64(ids[0])).Scan(&n))
	require.Equal(t, 1, n, "one create in the ledger")

	// Without a key, every create is a sale of its own.
	for range 2 {
		require.Equal(t, http.StatusCreated, e.Do("POST", "/admin/v1/sessions", testenv.AdminToken, body).Status)
	}
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM sessions WHERE title = ?", key).Scan(&n))
	require.Equal(t, 3, n)
	e.RequireInvariants(int64(ids[0]))
}
