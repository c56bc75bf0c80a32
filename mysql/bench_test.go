package mysql_test

import (
	"context"
	"fmt"
	"sync"
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

// BenchmarkCloseOrder closes b.N orders of one session from 32 workers, as
// a crowd of pay timers firing together does: the batches of closes
// (mysql/batch.go).
func BenchmarkCloseOrder(b *testing.B) {
	e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	now := time.Now().UTC()
	sess := &seckill.Session{SKUID: 1, Title: "bench", PriceCents: 1, TotalStock: 10_000_000, PerUserLimit: 1,
		StartAt: now, EndAt: now.Add(time.Hour)}
	if err := e.DB.CreateSession(ctx, sess, nil); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*seckill.OrderRequest, b.N)
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: fmt.Sprintf("%d-%d", sess.ID, i),
			SessionID: sess.ID, UserID: int64(i), Quantity: 1, Slots: []int{1}, ReservedAt: now, TraceID: "b", SKUID: 1},
			PriceCents: 1}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.DB.CreateOrder(ctx, reqs[i], now.Add(time.Minute)); err != nil {
				b.Error(err)
			}
		}()
		if i%64 == 63 {
			wg.Wait()
		}
	}
	wg.Wait()
	var n atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			o, gave, err := e.DB.CloseOrder(ctx, reqs[n.Add(1)-1], "pay_timeout")
			if err != nil || o.Status != seckill.StatusClosed || !gave {
				b.Fatalf("close: %+v %v %v", o, gave, err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "closes/s")
}
