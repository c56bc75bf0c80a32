package admission

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The front door is busy with many order requests in flight (a burst
// waiting for the admission script) or at a high rate (a sold-out burst
// answered from memory), and quiet otherwise.
func TestFrontDoorBusy(t *testing.T) {
	var d FrontDoor
	release := make(chan struct{})
	var entered sync.WaitGroup
	// An order request as the route makes one: counted in, answered once
	// released, counted out.
	order := func() {
		d.Enter()
		defer d.Leave()
		entered.Done()
		<-release
	}
	now := time.Now()
	require.False(t, d.Busy(now))

	var done sync.WaitGroup
	send := func(n int) {
		entered.Add(n)
		for range n {
			done.Add(1)
			go func() {
				defer done.Done()
				order()
			}()
		}
		entered.Wait()
	}
	send(busyInFlight - 1)
	require.False(t, d.Busy(now), "a handful in flight is a quiet sale")
	send(1)
	require.True(t, d.Busy(now), "%d in flight is a burst", busyInFlight)
	close(release)
	done.Wait()
	require.False(t, d.Busy(now), "answered, and no sample saw it: quiet again")

	// A rate: the requests of one sample, scaled to a second.
	perSample := int64(busyRate * doorSample / time.Second)
	d.sample(now)
	d.seen.Add(perSample - 1)
	d.sample(now)
	require.False(t, d.Busy(now), "just under %d requests/s", busyRate)
	d.seen.Add(perSample)
	d.sample(now)
	require.True(t, d.Busy(now), "%d requests/s is a burst", busyRate)

	// A burst's arrivals stall for a sample or two: still a burst, until
	// doorLinger has passed since the last sample that saw one.
	now = now.Add(doorSample)
	d.sample(now)
	require.True(t, d.Busy(now), "a quiet sample within a burst")
	require.True(t, d.Busy(now.Add(doorLinger-doorSample-time.Nanosecond)), "still within doorLinger of the burst's last sample")
	require.False(t, d.Busy(now.Add(doorLinger-doorSample)), "doorLinger after the burst's last sample: quiet")

	// A sample that sees many in flight lingers too.
	release = make(chan struct{})
	send(busyInFlight)
	now = now.Add(time.Second)
	d.sample(now)
	close(release)
	done.Wait()
	require.True(t, d.Busy(now.Add(doorLinger-time.Nanosecond)), "answered, but a sample saw the burst")
	require.False(t, d.Busy(now.Add(doorLinger)), "answered, doorLinger later: quiet")
}
