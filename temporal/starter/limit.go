package starter

import (
	"math"
	"sync"
	"time"
)

// Limit is the adaptive bound on workflow starts in flight, AIMD steered
// by errors and by an absolute latency bound: each round trip in which
// starts answer within High (and the limit is in use) the limit grows by
// its square root; a round trip slower than High takes a tenth off; a
// timeout or an overloaded/unavailable server halves it, once per
// congestion event.
//
// Why not latency relative to the fastest seen (TCP Vegas) or to a moving
// average (Netflix's gradient): during a sale the Temporal server is busy
// running the very workflows we start, and its latency swings with that
// work, not with our concurrency: every start looks congested, and a limit
// steered by the idle minimum, or by a moving average, sits at its floor
// while the server would take far more in flight (docs/BENCHMARKS.md). A
// start is one cheap call; what matters is that it answers well within
// its deadline, which is what High bounds.
type Limit struct {
	// Min and Max bound the limit (defaults 4 and 128); Initial is where
	// it starts (16).
	Min, Max, Initial int
	// High is the start latency above which a round trip counts as slow
	// (default 1s: a fifth of the starter's call deadline).
	High time.Duration

	mu      sync.Mutex
	limit   float64
	lastCut time.Time
	rtt     float64 // moving average of start latency, seconds: a round trip's length
	// The current round trip began at the last update (or the first
	// start) and ends with the first answer a round trip later; the mean
	// of the answers within it is its latency.
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
		l.Initial = 16
	}
	l.Initial = min(max(l.Initial, l.Min), l.Max)
	if l.High <= 0 {
		l.High = time.Second
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

// Succeeded records a start sent at sent and answered at done, with
// inFlight starts in flight when it was sent (itself included).
func (l *Limit) Succeeded(sent, done time.Time, inFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup()
	rtt := done.Sub(sent).Seconds()
	if l.rtt == 0 {
		l.rtt = rtt
	} else {
		l.rtt += (rtt - l.rtt) / 10
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
	if done.Sub(l.rtStart).Seconds() < l.rtt {
		return
	}
	mean := l.rtSum / float64(l.rtN)
	busy := l.rtBusy
	l.rtStart, l.rtSum, l.rtN, l.rtBusy = done, 0, 0, false
	switch {
	case mean > l.High.Seconds():
		l.limit *= 0.9
	case busy:
		l.limit += math.Sqrt(l.limit)
	}
	l.limit = math.Min(float64(l.Max), math.Max(float64(l.Min), l.limit))
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
