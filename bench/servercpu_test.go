package bench

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The meter finds the process behind a loopback address (here this test's
// own listener) and reads what it spends; a remote server is not metered.
func TestServerCPUMeter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	m := meterServer(ln.Addr().String())
	require.NotNil(t, m)
	require.Equal(t, os.Getpid(), m.pid)

	from := m.mark()
	require.NotNil(t, from)
	x := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		x++ // busy: the process spends CPU
	}
	p := m.phase(from)
	require.Positive(t, x)
	require.Positive(t, p.serverSeconds)
	require.Positive(t, p.share)
	require.LessOrEqual(t, p.share, 1.0)
	require.InDelta(t, p.serverSeconds*1000/4, p.msPer(4), 1e-9)

	require.Nil(t, meterServer("192.0.2.1:7233"), "not this machine")
	require.Nil(t, meterServer("no-port"))
	var none *serverCPU
	require.Nil(t, none.mark())
	require.Zero(t, none.phase(nil))
}

// quiet waits out a machine kept busy, up to its bound, and not a
// cancelled context.
func TestQuietWaitsForABusyMachine(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default: // busy: a core's worth of work, more than quietCores
				}
			}
		}()
	}
	require.GreaterOrEqual(t, quiet(context.Background(), 600*time.Millisecond), 600*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Less(t, quiet(ctx, time.Minute), time.Minute)
}

// A burst's meter splits what the burst cost per request by process: here
// the "API" and the load generator are this process, and Redis is not
// metered (no server of this machine listens at that address).
func TestBurstMeter(t *testing.T) {
	m := newBurstMeter(os.Getpid(), "192.0.2.1:6379")
	require.Nil(t, m.redis)
	m.start()
	x := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	var spent cpuSpent
	spent.add(m.stop())
	require.Positive(t, x)
	c := spent.perRequest(1000)
	require.NotNil(t, c)
	require.Positive(t, c.API)
	// One process read twice: equal but for a clock tick (10 ms, 10 µs
	// over 1,000 requests) between the reads.
	require.InDelta(t, c.API, c.Bench, 20)
	require.Zero(t, c.Redis)
	require.GreaterOrEqual(t, c.Machine, c.API*0.9, "the machine's busy time holds this process's")
	require.Nil(t, spent.perRequest(0))
	require.Nil(t, cpuSpent{}.perRequest(10), "nothing read")
}
