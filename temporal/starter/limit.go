package starter

import (
	"math"
	"sync"
	"time"
)

// Limit is the adaptive bound on workflow starts in flight, steered by
// start latency the way Netflix's concurrency-limits "gradient2" is: each
// round trip it compares the latency of that round trip (short term) with
// a slow moving average of many (long term). While the two agree the limit
// grows by its square root per round trip (a fixed queue allowance); when
// the short term rises above Tolerance × the long term, it is our own
// concurrency queueing at the server and the limit shrinks in proportion
// (at most by half per round trip). A timeout or an overloaded/unavailable
// server halves it, once per congestion event.
//
// Why not the minimum latency, as TCP Vegas does: during a sale the
// Temporal server is busy running the very workflows we start (and on a
// small machine shares its cores with everything else), so every start
// takes several times the idle minimum whatever our concurrency. Measured
// against the minimum, that looked like congestion and held the limit at
// its floor: 2 starts in flight, 26 orders/s against 121 no-op workflows/s
// at 5,000 winners. The long-term average moves with the server's load; the
// short term only rises above it when our own starts queue up.
type Limit struct {
	// Min and Max bound the limit (defaults 4 and 128); Initial is where
	// it starts (8).
	Min, Max, Initial int
	// Tolerance is how far the short-term latency may rise above the long
	// term before the limit shrinks (default 1.5).
	Tolerance float64
	// LongWindow is how many starts the long-term average spans (default
	// 500: a few seconds of a sale, long enough to outlast a round trip's
	// noise, short enough to follow the server's load).
	LongWindow int

	mu      sync.Mutex
	limit   float64
	lastCut time.Time
	long    float64 // long-term moving average of start latency, seconds
	// The current round trip began at the last update (or the first
	// start) and ends with the first answer a long-term latency later;
	// the mean of the answers within it is the short-term latency.
	rtStart time.Time
	rtSum   float64
	rtN     int
	rtBusy  bool // a start of this round trip was sent with the limit in use
	init    bool
}

func (l *Limit) setup() {
	if l.init {
		return
	}
	l.init = true
	if l.Min <= 0 {
		l.Min = 4
	}
	if l.Max < l.Min {
		l.Max = max(128, l.Min)
	}
	if l.Initial <= 0 {
		l.Initial = 8
	}
	l.Initial = min(max(l.Initial, l.Min), l.Max)
	if l.Tolerance <= 1 {
		l.Tolerance = 1.5
	}
	if l.LongWindow <= 0 {
		l.LongWindow = 500
	}
	l.limit = float64(l.Initial)
}

// Current is the number of starts allowed in flight.
func (l *Limit) Current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup()
	return int(l.limit)
}

// LongLatency is the long-term average start latency (0: none yet).
func (l *Limit) LongLatency() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Duration(l.long * float64(time.Second))
}

// Succeeded records a start sent at sent and answered at done, with
// inFlight starts in flight when it was sent (itself included).
func (l *Limit) Succeeded(sent, done time.Time, inFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup()
	rtt := done.Sub(sent).Seconds()
	if l.long == 0 {
		l.long = rtt
	} else {
		l.long += (rtt - l.long) / float64(l.LongWindow)
	}
	if l.rtStart.IsZero() {
		l.rtStart = sent
	}
	l.rtSum += rtt
	l.rtN++
	// Only a limit that is in use may grow: an idle starter must not talk
	// itself into a limit it never tried.
	if float64(inFlight)*2 >= l.limit {
		l.rtBusy = true
	}
	if done.Sub(l.rtStart).Seconds() < l.long {
		return
	}
	short := l.rtSum / float64(l.rtN)
	busy := l.rtBusy
	l.rtStart, l.rtSum, l.rtN, l.rtBusy = done, 0, 0, false
	if l.long/short > 2 {
		// Far quicker than the long term says: the load went away; let
		// the average catch up faster than its window.
		l.long *= 0.95
	}
	gradient := math.Max(0.5, math.Min(1, l.Tolerance*l.long/short))
	next := l.limit * gradient
	if gradient == 1 {
		if !busy {
			return
		}
		next += math.Sqrt(l.limit) // the queue allowance: probe for more
	}
	l.limit = math.Min(float64(l.Max), math.Max(float64(l.Min), next))
}

// Overloaded records a start sent at sent that timed out or that the
// server refused as overloaded or unavailable (answered at done): the
// limit halves. A cut happens at most once per congestion event: only a
// call sent after the last cut can cause the next, so a hundred timeouts
// from one stall halve the limit once, not a hundred times.
func (l *Limit) Overloaded(sent, done time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup()
	if !sent.After(l.lastCut) {
		return
	}
	l.lastCut = done
	l.limit = math.Max(float64(l.Min), l.limit/2)
}
