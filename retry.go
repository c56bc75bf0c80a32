package seckill

import "time"

// Retry is how work that failed at another system (a refund at the payment
// provider, an order event at its receiver) is tried again: after a failed
// try the next one waits First, then twice as long each time up to Max.
// After Attempts failed tries the work is parked: kept and visible to ops,
// but no longer tried on its own until an operator retries it.
type Retry struct {
	First    time.Duration
	Max      time.Duration
	Attempts int
}

// Backoff is the wait after the failures-th failed try (counting from 1).
func (p Retry) Backoff(failures int) time.Duration {
	d := p.First
	for i := 1; i < failures && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Park reports whether work with this many failed tries is parked.
func (p Retry) Park(failures int) bool { return p.Attempts > 0 && failures >= p.Attempts }
