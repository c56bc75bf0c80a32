package starter

import (
	"sync"
	"time"
)

// Limit is the adaptive bound on workflow starts in flight (AIMD steered
// by latency, as TCP Vegas and Netflix's concurrency-limits do): while
// start latency stays near its minimum the limit grows (doubling per round
// trip until the first sign of congestion, then by one per round trip);
// latency above Tolerance × the minimum takes a tenth off; a timeout or an
// overloaded/unavailable server halves it. A cut happens at most once per
// round trip: only a call sent after the last cut can cause the next, so a
// hundred timeouts from one stall halve the limit once, not a hundred times.
type Limit struct {
	// Min and Max bound the limit; Initial is where it starts.
	Min, Max, Initial int
	// Tolerance is how far above the minimum latency a start may take and
	// still count as "near the minimum" (default 2); Slack is an absolute
	// allowance added to it (default 50ms; a negative value means none).
	// The slack matters: a busy server answers an idle-time minimum of a
	// few milliseconds with tens of milliseconds whatever our concurrency
	// (it is busy running the workflows), and without it the limit would
	// shrink to Min and leave the server's capacity unused (measured: one
	// start in flight, ≈ 30 starts/s against ≈ 190 no-op workflows/s).
	Tolerance float64
	Slack     time.Duration
	// Window is how long the minimum latency is remembered (between one
	// and two windows): long enough to outlast a burst, short enough to
	// follow a server that got slower for good.
	Window time.Duration

	mu        sync.Mutex
	limit     float64
	slowStart bool
	lastCut   time.Time
	minCur    time.Duration // minimum of the current window
	minPrev   time.Duration // minimum of the previous window
	winStart  time.Time
	init      bool
}

func (l *Limit) setup(now time.Time) {
	if l.init {
		return
	}
	l.init = true
	if l.Min <= 0 {
		l.Min = 2
	}
	if l.Max < l.Min {
		l.Max = 128
	}
	if l.Initial < l.Min {
		l.Initial = 8
	}
	if l.Initial > l.Max {
		l.Initial = l.Max
	}
	if l.Tolerance <= 1 {
		l.Tolerance = 2
	}
	switch {
	case l.Slack == 0:
		l.Slack = 50 * time.Millisecond
	case l.Slack < 0:
		l.Slack = 0
	}
	if l.Window <= 0 {
		l.Window = 30 * time.Second
	}
	l.limit = float64(l.Initial)
	l.slowStart = true
	l.winStart = now
}

// Current is the number of starts allowed in flight.
func (l *Limit) Current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup(time.Now())
	return int(l.limit)
}

// MinLatency is the minimum start latency remembered (0: none yet).
func (l *Limit) MinLatency() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.minLocked()
}

func (l *Limit) minLocked() time.Duration {
	switch {
	case l.minCur == 0:
		return l.minPrev
	case l.minPrev == 0 || l.minCur < l.minPrev:
		return l.minCur
	}
	return l.minPrev
}

// Succeeded records a start sent at sent and answered at done, with
// inFlight starts in flight when it was sent (itself included).
func (l *Limit) Succeeded(sent, done time.Time, inFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, rtt := done, done.Sub(sent)
	l.setup(now)
	if now.Sub(l.winStart) >= l.Window {
		l.minPrev, l.minCur, l.winStart = l.minCur, 0, now
	}
	if l.minCur == 0 || rtt < l.minCur {
		l.minCur = rtt
	}
	minRTT := l.minLocked()
	threshold := time.Duration(float64(minRTT)*l.Tolerance) + l.Slack
	if rtt > threshold {
		l.cut(sent, done, 0.9)
		return
	}
	// Grow only a limit that is in use: an idle starter must not talk
	// itself into a limit it never tried.
	if float64(inFlight)*2 < l.limit {
		return
	}
	if l.slowStart {
		l.limit++
	} else {
		l.limit += 1 / l.limit
	}
	if l.limit > float64(l.Max) {
		l.limit = float64(l.Max)
	}
}

// Overloaded records a start sent at sent that timed out or that the
// server refused as overloaded or unavailable (answered at done): the
// limit halves.
func (l *Limit) Overloaded(sent, done time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setup(sent)
	l.cut(sent, done, 0.5)
}

func (l *Limit) cut(sent, done time.Time, factor float64) {
	if !sent.After(l.lastCut) {
		return // this call was in flight before the last cut: same congestion event
	}
	l.lastCut = done
	l.slowStart = false
	l.limit *= factor
	if l.limit < float64(l.Min) {
		l.limit = float64(l.Min)
	}
}
