package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// listLoads counts the API's MySQL session list queries.
type listLoads struct {
	app.APIStore
	n atomic.Int64
}

func (s *listLoads) OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error) {
	s.n.Add(1)
	return s.APIStore.OpenSessions(ctx, now, limit)
}

func createSession(t *testing.T, e *testenv.Env, title string, start, end time.Duration) *seckill.Session {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	s := &seckill.Session{SKUID: 7, Title: title, PriceCents: 500, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(start), EndAt: now.Add(end)}
	require.NoError(t, e.DB.CreateSession(context.Background(), s, nil))
	return s
}

// GET /api/v1/sessions lists the sessions not yet ended, soonest first, in
// the shape of GET /api/v1/sessions/{id}; an ended one is not listed.
func TestSessionList(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	r := e.Do("GET", "/api/v1/sessions", "", nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, []any{}, r.Body["sessions"], "%s", r.Raw)

	createSession(t, e, "ended", -2*time.Hour, -time.Hour)
	upcoming := createSession(t, e, "upcoming", time.Hour, 2*time.Hour)
	active := e.Session(4, 2, 300)
	soon := createSession(t, e, "ends soon", -time.Minute, 300*time.Millisecond)

	var list []any
	e.Eventually(5*time.Second, "the list shows the new sessions", func() error {
		r = e.Do("GET", "/api/v1/sessions", "", nil)
		list, _ = r.Body["sessions"].([]any)
		if len(list) != 3 {
			return fmt.Errorf("%s", r.Raw)
		}
		return nil
	})
	require.Equal(t, "public, max-age=1", r.Header.Get("Cache-Control"))
	require.Contains(t, r.Header.Get("Content-Type"), "application/json")
	first := list[0].(map[string]any)
	require.Equal(t, float64(soon.ID), first["id"], "%s", r.Raw)
	require.Equal(t, "PREPARING", first["state"], "on sale but never preheated: nothing to buy yet, and not sold out")

	// Each entry is exactly what the single-session endpoint answers.
	second := list[1].(map[string]any)
	require.Equal(t, float64(active.ID), second["id"])
	one := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d", active.ID), "", nil)
	require.Equal(t, one.Body, second)
	require.Equal(t, "ACTIVE", second["state"])
	require.Equal(t, float64(4), second["remaining_stock"])

	third := list[2].(map[string]any)
	require.Equal(t, float64(upcoming.ID), third["id"])
	require.Equal(t, "UPCOMING", third["state"])
	require.Equal(t, "upcoming", third["title"])
	for _, k := range []string{"sku_id", "price_cents", "start_at", "end_at", "per_user_limit", "total_stock"} {
		require.Contains(t, third, k)
	}

	// Once "ends soon" has ended it leaves the list.
	e.Eventually(5*time.Second, "the ended session leaves the list", func() error {
		r = e.Do("GET", "/api/v1/sessions", "", nil)
		for _, s := range r.Body["sessions"].([]any) {
			if s.(map[string]any)["id"] == float64(soon.ID) {
				return fmt.Errorf("still listed: %s", r.Raw)
			}
		}
		return nil
	})
	require.Len(t, r.Body["sessions"], 2)
}

// Under load the list costs MySQL one query per cache period, not one per
// request: concurrent misses share one load.
func TestSessionListIsServedFromMemory(t *testing.T) {
	var loads *listLoads
	e := testenv.New(t, testenv.Options{NoWorker: true, WrapStore: func(s app.APIStore) app.APIStore {
		loads = &listLoads{APIStore: s}
		return loads
	}})
	e.Session(10, 1, 100)
	const requests = 400
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < requests/16; i++ {
				r := e.Do("GET", "/api/v1/sessions", "", nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
				require.Len(t, r.Body["sessions"], 1)
			}
		}()
	}
	wg.Wait()
	// The Env's cache period is 50ms: at most one load per period begun.
	periods := time.Since(start)/(50*time.Millisecond) + 1
	require.LessOrEqual(t, loads.n.Load(), int64(periods), "%d loads for %d requests in %s", loads.n.Load(), requests, time.Since(start))
}
