package temporal_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"syscall"
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
	server := 0
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
			server0, self0 := serverCPU(server), selfCPU()
			b.ResetTimer()
			if _, err := bench.Noops(ctx, c, 64, b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric((selfCPU()-self0)*1000/float64(b.N), "client-cpu-ms/op")
			if server > 0 {
				b.ReportMetric((serverCPU(server)-server0)*1000/float64(b.N), "server-cpu-ms/op")
			}
		})
	}
}

// serverCPU is the Temporal server's CPU time in seconds; 0 when unknown.
func serverCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	s, _ := bench.ProcessCPU(pid)
	return s
}

// selfCPU is this process's CPU time in seconds.
func selfCPU() float64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9
}
