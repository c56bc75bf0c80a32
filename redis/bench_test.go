package redis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
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
			e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
			e.Gate.Coalesce = c.coalesce
			ctx := context.Background()
			if err := e.Gate.Load(ctx); err != nil {
				b.Fatal(err)
			}
			sess := &seckill.Session{ID: 1, PerUserLimit: 1}
			if _, err := e.Gate.Preheat(ctx, sess.ID, c.stock); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			now := time.Now()
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					_, _, err := e.Gate.Admit(ctx, sess, i, 1, "1-"+strconv.FormatInt(i, 10), "b", now)
					if code := seckill.ErrorCode(err); code != "" && code != seckill.ESOLDOUT {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
