package temporal_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"testing"

	"go.temporal.io/sdk/client"

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
	server, self := 0, os.Getpid()
	if _, port, err := net.SplitHostPort(e.TemporalAddr); err == nil {
		if n, err := strconv.Atoi(port); err == nil {
			server, _ = bench.ListeningPID(n)
		}
	}
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
			server0, self0 := processCPU(server), processCPU(self)
			b.ResetTimer()
			if _, err := bench.Noops(ctx, c, 64, b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric((processCPU(self)-self0)*1000/float64(b.N), "client-cpu-ms/op")
			if server > 0 {
				b.ReportMetric((processCPU(server)-server0)*1000/float64(b.N), "server-cpu-ms/op")
			}
		})
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
