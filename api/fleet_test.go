package api_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/temporal/starter"
)

// gauge reads one unlabelled series from a server's /metrics.
func gauge(t *testing.T, srv *app.API, name string) float64 {
	t.Helper()
	resp, err := srv.App().Test(httptest.NewRequest(http.MethodGet, "/metrics", nil), -1)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("%s not in /metrics", name)
	return 0
}

// secondAPI starts another API process's server in this test, on the same
// Redis prefix (the same deployment) with its own metrics; stop ends its
// background loops the way a crash would (no Shutdown, no Leave).
func secondAPI(t *testing.T, e *testenv.Env, limits app.Limits) (srv *app.API, stop context.CancelFunc) {
	t.Helper()
	cfg := e.App.APIConfig(false)
	cfg.Limits, cfg.Metrics = limits, metrics.New()
	srv, err := app.NewAPI(cfg, starter.Config{}, e.DB, e.Gate, e.Orders)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	srv.Start(ctx)
	return srv, stop
}

// The global limit is the fleet's budget: each live API takes an even
// share, recomputed from heartbeats in Redis; a crashed API's share goes
// back to the others when its heartbeat lapses, a stopped one's at once.
func TestGlobalLimitIsSharedByTheFleet(t *testing.T) {
	limits := app.Limits{Global: 100}
	e := testenv.New(t, testenv.Options{NoWorker: true, Limits: limits})
	share := func(srv *app.API, want float64) func() error {
		return func() error {
			if got := gauge(t, srv, "seckill_limit_global_share_rps"); got != want {
				return errors.New("share " + strconv.FormatFloat(got, 'f', -1, 64))
			}
			return nil
		}
	}
	e.Eventually(3*time.Second, "one API: the whole budget", share(e.API, 100))
	require.Equal(t, 1.0, gauge(t, e.API, "seckill_api_fleet_size"))

	second, crash := secondAPI(t, e, limits)
	e.Eventually(3*time.Second, "the second API's half", share(second, 50))
	e.Eventually(3*time.Second, "the first API's half", share(e.API, 50))
	require.Equal(t, 2.0, gauge(t, e.API, "seckill_api_fleet_size"))

	// The share is enforced: of a rush at one API, no more than its half
	// of the budget (a full bucket plus what refills meanwhile) gets past
	// the limit (to the 401 of a request without a token).
	passed, t0 := 0, time.Now()
	for range 150 {
		resp, err := second.App().Test(httptest.NewRequest(http.MethodPost, "/api/v1/sessions/1/orders", strings.NewReader(`{"quantity":1}`)), -1)
		require.NoError(t, err)
		resp.Body.Close()
		require.Contains(t, []int{http.StatusUnauthorized, http.StatusTooManyRequests}, resp.StatusCode)
		if resp.StatusCode == http.StatusUnauthorized {
			passed++
		}
	}
	require.LessOrEqual(t, passed, 50+int(50*time.Since(t0).Seconds())+1, "the second API let through more than its share")
	require.GreaterOrEqual(t, passed, 50, "a full bucket of its share passes")

	// A crash: no more heartbeats; the survivor takes the whole budget
	// once the dead one's heartbeat lapses (3 s).
	crash()
	e.Eventually(8*time.Second, "the survivor's whole budget after a crash", share(e.API, 100))

	// A clean stop leaves the fleet at once.
	third, _ := secondAPI(t, e, limits)
	e.Eventually(3*time.Second, "the first API's half again", share(e.API, 50))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	third.Shutdown(ctx)
	e.Eventually(3*time.Second, "the whole budget after a clean stop", share(e.API, 100))
}

// flakyFleet answers with a fleet size until it is told to fail.
type flakyFleet struct {
	mu   sync.Mutex
	size int
	err  error
}

func (f *flakyFleet) Beat(context.Context, string, time.Duration) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.size, f.err
}

func (f *flakyFleet) Leave(context.Context, string) error { return nil }

func (f *flakyFleet) set(size int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.size, f.err = size, err
}

// Without Redis the share stays what the fleet last said: the global limit
// still holds, neither dropping to nothing nor growing to the whole budget.
func TestGlobalShareHoldsWhenRedisIsDown(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	fleet := &flakyFleet{size: 4}
	cfg := e.App.APIConfig(false)
	cfg.Limits, cfg.Metrics, cfg.Fleet = app.Limits{Global: 100}, metrics.New(), fleet
	srv, err := app.NewAPI(cfg, starter.Config{}, e.DB, e.Gate, e.Orders)
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv.Start(ctx)
	require.Equal(t, 25.0, gauge(t, srv, "seckill_limit_global_share_rps"), "the first heartbeat sets the share before serving")
	fleet.set(0, errors.New("redis: connection refused"))
	time.Sleep(2500 * time.Millisecond) // two missed heartbeats
	require.Equal(t, 25.0, gauge(t, srv, "seckill_limit_global_share_rps"))
	fleet.set(3, nil)
	e.Eventually(3*time.Second, "the share follows the fleet again", func() error {
		if got := gauge(t, srv, "seckill_limit_global_share_rps"); got != 34 {
			return errors.New("share " + strconv.FormatFloat(got, 'f', -1, 64))
		}
		return nil
	})
}
