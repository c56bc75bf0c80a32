package temporal_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/bench"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal"
)

// BenchmarkNoopsByCompression runs the bench's no-op workflows (one local
// activity, eager start, 64 at a time) on a client with the SDK's default
// gzip and on one without compression (Dial's choice), side by side, and
// reports what each costs the Temporal server and this process in CPU per
// workflow (the server's only when it runs on this machine). Run the two
// several times interleaved: the dev server slows as its history grows.
func BenchmarkNoopsByCompression(b *testing.B) {
	e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
	for _, mode := range []struct {
		name string
		c    client.GrpcCompression
	}{{"gzip", &client.GrpcCompressionGzip{}}, {"none", &client.GrpcCompressionNone{}}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			opts := client.Options{HostPort: e.TemporalAddr, ConnectionOptions: client.ConnectionOptions{GrpcCompression: mode.c}}
			c, err := temporal.Dial(ctx, opts, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			runNoops(b, e.TemporalAddr, c, nil)
		})
	}
}

// BenchmarkNoopsByStartOptions runs the bench's no-op workflows bare, as
// the rate ratios' baseline does, and with what an order's workflow
// starts with beyond it (its search attributes, summary and memo:
// temporal.Orders' start options), side by side: what listing an order in
// the Web UI costs the server, a part of what an order costs beyond the
// no-op (orders_vs_temporal_noop). Run the two several times interleaved.
func BenchmarkNoopsByStartOptions(b *testing.B) {
	e := testenv.New(b, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	c, err := temporal.Dial(ctx, client.Options{HostPort: e.TemporalAddr}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("bare", func(b *testing.B) { runNoops(b, e.TemporalAddr, c, nil) })
	b.Run("order", func(b *testing.B) {
		runNoops(b, e.TemporalAddr, c, func(i int, o *client.StartWorkflowOptions) {
			order := temporal.StartOptions(&seckill.OrderRequest{Reservation: seckill.Reservation{
				OrderNo: "1-" + strconv.Itoa(i), SessionID: 1, UserID: int64(i + 1), Quantity: 1,
				TraceID: strconv.FormatInt(time.Now().UnixNano(), 16)}})
			o.TypedSearchAttributes, o.StaticSummary, o.Memo = order.TypedSearchAttributes, order.StaticSummary, order.Memo
		})
	})
}

// runNoops runs b.N no-op workflows on c (bench.Noops, 64 at a time, with
// the start options with adds) and reports what each cost this process
// and the Temporal server at addr in CPU (the server's only when it runs
// on this machine).
func runNoops(b *testing.B, addr string, c client.Client, with func(int, *client.StartWorkflowOptions)) {
	server, self := 0, os.Getpid()
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(port); err == nil {
			server, _ = bench.ListeningPID(n)
		}
	}
	server0, self0 := processCPU(server), processCPU(self)
	b.ResetTimer()
	if _, err := bench.Noops(context.Background(), c, 64, b.N, with); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric((processCPU(self)-self0)*1000/float64(b.N), "client-cpu-ms/op")
	if server > 0 {
		b.ReportMetric((processCPU(server)-server0)*1000/float64(b.N), "server-cpu-ms/op")
	}
}

// processCPU is process pid's CPU time in seconds; 0 when unknown.
func processCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	s, _ := bench.ProcessCPU(pid)
	return s
}
