package redis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
)

// The admission script through go-redis (EVALSHA, preloaded), 64
// concurrent callers: winners (every call deducts) and losers (sold out),
// one script call per attempt against attempts coalesced into batches.
//
//	go test ./redis/ -run '^$' -bench Admit
func BenchmarkAdmit(b *testing.B) {
	for _, c := range []struct {
		name     string
		stock    int
		coalesce bool
	}{
		{"winners/one-call-each", 100_000_000, false}, {"winners/coalesced", 100_000_000, true},
		{"sold-out/one-call-each", 0, false}, {"sold-out/coalesced", 0, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, sess := preheated(b, c.stock)
			e.Gate.Coalesce = c.coalesce
			ctx, now := context.Background(), time.Now()
			inParallel(b, 32, "calls/s", func(i int64) {
				_, _, err := e.Gate.Admit(ctx, sess, i, 1, "1-"+strconv.FormatInt(i, 10), "b", now)
				if code := seckill.ErrorCode(err); code != "" && code != seckill.ESOLDOUT {
					b.Fatal(err)
				}
			})
		})
	}
}

// The winners' admission behind the per-user rate limit, as the API runs
// them (the limit, then the coalesced script), many callers at once as in
// a burst (128 per CPU): without the limit, with the limiter's calls
// coalesced into pipelines, and one round trip per call. Interleaved, so
// the ratios are read within one run:
//
//	go test ./redis/ -run '^$' -bench AdmitLimited -benchtime 3s
func BenchmarkAdmitLimited(b *testing.B) {
	for _, mode := range []string{"no-limit", "coalesced", "one-call-each", "no-limit", "one-call-each", "coalesced"} {
		b.Run(mode, func(b *testing.B) {
			e, sess := preheated(b, 100_000_000)
			l := redis.NewLimiter(e.Redis, e.Prefix)
			l.Coalesce = mode == "coalesced"
			ctx, now := context.Background(), time.Now()
			inParallel(b, 128, "admissions/s", func(user int64) {
				if mode != "no-limit" {
					if ok, _, err := l.Allow(ctx, "user:"+strconv.FormatInt(user, 10), 5); err != nil || !ok {
						b.Fatalf("user %d's first request: allowed %v, %v", user, ok, err)
					}
				}
				if _, _, err := e.Gate.Admit(ctx, sess, user, 1, "1-"+strconv.FormatInt(user, 10), "b", now); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// preheated is a test's slice of Redis with its gate's scripts loaded and
// session 1 (one unit a shopper) holding stock units.
func preheated(b *testing.B, stock int) (*testenv.Env, *seckill.Session) {
	e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	if err := e.Gate.Load(ctx); err != nil {
		b.Fatal(err)
	}
	sess := &seckill.Session{ID: 1, PerUserLimit: 1}
	if _, err := e.Gate.Preheat(ctx, sess.ID, stock); err != nil {
		b.Fatal(err)
	}
	return e, sess
}

// inParallel calls each with 1, 2, 3, … from parallelism goroutines per
// CPU until the benchmark's count, and reports the calls a second as unit.
func inParallel(b *testing.B, parallelism int, unit string, each func(i int64)) {
	var n atomic.Int64
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			each(n.Add(1))
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
