package admission

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/internal/tick"
)

// Thresholds of a busy front door. A quiet sale has a handful of order
// requests in flight and a modest rate. A burst has many in flight while
// they wait for the admission script (Little's law: in flight = rate ×
// time in the handler) and, once the sale is sold out, a rate far above a
// quiet sale's answered from memory, few in flight at any instant but the
// CPU still saturated: either sign is a burst. The thresholds sit between
// the two (the figures behind them: docs/BENCHMARKS.md, "The front door
// and the starter").
const (
	busyInFlight = 32
	busyRate     = 5000 // order requests per second
	// doorSample is how often the rate is sampled.
	doorSample = 50 * time.Millisecond
	// doorLinger is how long the door stays busy after the last sample
	// that saw a burst. On a saturated machine a burst's arrivals stall
	// now and then (a pause in the client, the network or this process):
	// a sample or two of quiet, and without the linger the starter sent
	// starts in them, whose CPU went to the burst's shoppers' expense (the
	// starter's gauges scraped during bursts show it; docs/BENCHMARKS.md).
	// A burst that has really ended delays the starts by this much more,
	// well within the yield's bound (starter.Config.Yield).
	doorLinger = 4 * doorSample
	// DoorSettle is how long the starter waits with a fresh winner before
	// asking the door (starter.Config.Settle): two samples, so that the
	// first full sample of a burst has been taken. The first sample after
	// a burst begins may have seen only its first few milliseconds, and a
	// burst's first winners come in those. Without it some bursts' orders
	// were created while the burst was being answered, and those bursts'
	// winners waited longer; with it, none are (docs/BENCHMARKS.md).
	DoorSettle = 2 * doorSample
)

// FrontDoor measures the order route (api counts the requests) for the
// process's workflow starter (its zero value is ready; internal/app hands
// the same one to the API and to the starter's Busy),
// which holds new starts for a moment while a burst is being answered
// (starter.Config.Busy): the CPU a start takes here (the order's first
// workflow task, eager start) and in the Temporal server is better spent
// on the shoppers still waiting for an answer.
type FrontDoor struct {
	inFlight atomic.Int64
	seen     atomic.Int64 // order requests so far
	// rate is the requests per second of the last sample; last is seen at
	// that sample (touched by sample alone).
	rate atomic.Int64
	last int64
	// until is when the door stops being busy without a new sign of a
	// burst (unix ns; doorLinger after the last busy sample).
	until atomic.Int64
}

// Enter counts an order request in, and Leave out: the order route's
// first handler calls both, whatever answers the request (the memory, a
// limit, the script).
func (d *FrontDoor) Enter() {
	d.seen.Add(1)
	d.inFlight.Add(1)
}

// Leave counts an order request out (see Enter).
func (d *FrontDoor) Leave() { d.inFlight.Add(-1) }

// Start samples the rate every doorSample until ctx ends.
func (d *FrontDoor) Start(ctx context.Context) {
	go tick.Every(ctx, doorSample, func() { d.sample(time.Now()) })
}

// sample turns the count into a rate; it runs every doorSample, now being
// the time of the sample.
func (d *FrontDoor) sample(now time.Time) {
	n := d.seen.Load()
	d.rate.Store((n - d.last) * int64(time.Second/doorSample))
	d.last = n
	if d.burst() {
		d.until.Store(now.Add(doorLinger).UnixNano())
	}
}

// burst says whether the door shows a burst this instant: many requests
// in flight, or a high rate in the last sample.
func (d *FrontDoor) burst() bool {
	return d.inFlight.Load() >= busyInFlight || d.rate.Load() >= busyRate
}

// Busy says whether a burst is being answered at now: one shows, or one
// showed at a sample less than doorLinger ago.
func (d *FrontDoor) Busy(now time.Time) bool {
	return d.burst() || now.UnixNano() < d.until.Load()
}
