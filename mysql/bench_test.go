package mysql_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// Order creation on one session's hot row, 32 concurrent workers: one
// transaction (and fsync) per order against the batcher's group commit.
//
//	go test ./mysql/ -run '^$' -bench CreateOrder -benchtime 2000x
func BenchmarkCreateOrder(b *testing.B) {
	for _, mode := range []string{"one-tx-per-order", "group-commit"} {
		b.Run(mode, func(b *testing.B) {
			e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
			now := time.Now().UTC()
			sess := &seckill.Session{SKUID: 1, Title: "bench", PriceCents: 1, TotalStock: 10_000_000, PerUserLimit: 1,
				StartAt: now, EndAt: now.Add(time.Hour)}
			if err := e.DB.CreateSession(context.Background(), sess, nil); err != nil {
				b.Fatal(err)
			}
			create := e.DB.CreateOrder
			if mode == "one-tx-per-order" {
				create = e.DB.CreateOneForTest
			}
			var n atomic.Int64
			b.SetParallelism(16) // 32 workers on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: fmt.Sprintf("%d-%d", sess.ID, i),
						SessionID: sess.ID, UserID: i, Quantity: 1, Slots: []int{1}, ReservedAt: now, TraceID: "b", SKUID: 1},
						PriceCents: 1}
					o, err := create(context.Background(), req, now.Add(time.Minute))
					if err != nil || o.Status != seckill.StatusWaitPay {
						b.Fatalf("create: %v %v", o, err)
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
		})
	}
}
