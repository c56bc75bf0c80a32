package activities_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// drawScale is what the real draw of one sale cost: its wall time, the
// peak of the heap in use above the heap before it (sampled), and what it
// allocated in all.
type drawScale struct {
	registrants   int
	seconds       float64
	peakHeapBytes uint64
	allocBytes    uint64
}

// The real draw (DrawSession, on MySQL and Redis) of a sale among N
// registrants and among N/10, one after the other in the same process,
// with the same stock (after a draw among 1,000 that warms the path up):
// the time grows with the registrants (each is read and ranked once), the
// memory does not (the draw keeps the best 2 × stock and a page of
// registrants). N is 20,000 in the test suite, so the
// measure cannot rot; the figures in docs/BENCHMARKS.md are
//
//	SECKILL_DRAW_SCALE=1000000 go test ./activities/ -run TestDrawScale -v -timeout 30m
//
// whose stock is N/1,000 (1,000 units: 2,000 places). From 100,000
// registrants on, the test also requires the peak heap of the larger draw
// within 3× the smaller's: memory O(registrants) would be 10×.
func TestDrawScale(t *testing.T) {
	n := 20_000
	if v := os.Getenv("SECKILL_DRAW_SCALE"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "SECKILL_DRAW_SCALE is a number of registrants")
		require.GreaterOrEqual(t, n, 1000)
	}
	stock := max(100, n/1000)
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	// A first draw, not recorded, pays for the cold connections and
	// caches the first measured one would carry.
	measureDraw(t, e, stock, 1000, 1)
	small := measureDraw(t, e, stock, n/10, 1)
	large := measureDraw(t, e, stock, n, int64(n))
	ratio := func(a, b float64) float64 { return a / max(b, 1e-9) }
	t.Logf("draw of %d places among %d registrants: %.2f s, peak heap +%.1f MB, allocated %.1f MB",
		2*stock, small.registrants, small.seconds, mb(small.peakHeapBytes), mb(small.allocBytes))
	t.Logf("draw of %d places among %d registrants: %.2f s, peak heap +%.1f MB, allocated %.1f MB",
		2*stock, large.registrants, large.seconds, mb(large.peakHeapBytes), mb(large.allocBytes))
	t.Logf("%d× the registrants: time ×%.2f, peak heap ×%.2f, allocated ×%.2f", n/(n/10),
		ratio(large.seconds, small.seconds), ratio(float64(large.peakHeapBytes), float64(small.peakHeapBytes)),
		ratio(float64(large.allocBytes), float64(small.allocBytes)))
	if n >= 100_000 {
		require.Less(t, ratio(float64(large.peakHeapBytes), float64(small.peakHeapBytes)), 3.0,
			"the draw's memory must not grow with its registrants")
	}
}

// measureDraw creates a draw sale of stock units on sale since a second
// ago, registers n users (from first on) straight in MySQL, runs its real
// draw in an activity environment while sampling the heap, and checks the
// draw against its definition.
func measureDraw(t *testing.T, e *testenv.Env, stock, n int, first int64) drawScale {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw scale", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: 600}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	e.RegisterInBulk(sess.ID, first, n)
	_, err := e.Gate.Preheat(ctx, sess.ID, stock)
	require.NoError(t, err)

	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	acts := e.App.Sessions()
	env.RegisterActivity(acts)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
	}()
	t0 := time.Now()
	_, err = env.ExecuteActivity(acts.DrawSession, sess.ID)
	took := time.Since(t0)
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	peak = max(peak, after.HeapInuse)

	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, s.Drawn())
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, min(n, 2*stock))
	users := make([]int64, n)
	for i := range users {
		users[i] = first + int64(i)
	}
	_, err = seckill.VerifyDraw(s, testenv.OneItem(users), entries)
	require.NoError(t, err, "the draw is its definition's")
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, rights, min(n, stock), "the winners' rights are in Redis")
	return drawScale{registrants: n, seconds: took.Seconds(), peakHeapBytes: peak - before.HeapInuse,
		allocBytes: after.TotalAlloc - before.TotalAlloc}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
