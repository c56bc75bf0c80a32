package orders

import (
	"context"
	"sync"
	"time"
)

// Backlogs count a sale's orders that wait for their workflow to create
// them (the starters' pending-start entries, redis.Gate).
type Backlogs interface {
	Backlog(ctx context.Context, sessionID int64) (int, error)
}

// A QUEUED order's shop page polls it until its row exists. At a sale of
// thousands of winners the line takes tens of seconds to create, and a
// poll a second from each winner is then the API's busiest work, taken
// from the order tier that creates the orders. So a QUEUED order's poll
// says when to look again: a quarter of the time the whole line takes at
// its current pace (its own place in the line is not known: see
// redis.Gate.Backlog), never less than minPoll, the shop page's pace, nor
// more than maxPoll. A pace unknown yet (the first second, the burst) is
// minPoll.
const (
	minPoll = time.Second
	maxPoll = 5 * time.Second
	// paceEvery is how far apart two counts of a backlog must be to
	// measure its pace: closer ones measure the noise of one poll's
	// timing.
	paceEvery = time.Second
	// maxSales bounds the sales whose pace is kept; one not polled for
	// paceTTL is forgotten.
	maxSales = 1 << 10
	paceTTL  = time.Minute
)

// Line is the line of a sale's QUEUED orders as their polls see it: how
// many wait, and when to look again (NewLine).
type Line struct {
	backlogs Backlogs
	now      func() time.Time
	mu       sync.Mutex
	sales    map[int64]*pace
}

// pace is a sale's backlog as last counted, and how fast it went down.
type pace struct {
	at        time.Time
	n         int
	perSecond float64
}

// NewLine builds a Line on backlogs; now is the clock (nil: time.Now).
func NewLine(backlogs Backlogs, now func() time.Time) *Line {
	if now == nil {
		now = time.Now
	}
	return &Line{backlogs: backlogs, now: now, sales: map[int64]*pace{}}
}

// Wait returns how many orders of the sale wait for their workflow (this
// one included) and how long a QUEUED order's poll should wait before the
// next one.
func (l *Line) Wait(ctx context.Context, sessionID int64) (int, time.Duration, error) {
	n, err := l.backlogs.Backlog(ctx, sessionID)
	if err != nil {
		return 0, 0, err
	}
	perSecond := l.observe(sessionID, n)
	if perSecond <= 0 {
		return n, minPoll, nil
	}
	wait := time.Duration(float64(n) / perSecond / 4 * float64(time.Second))
	return n, min(max(wait, minPoll), maxPoll), nil
}

// observe records a count of the sale's backlog and returns its pace, in
// orders created per second: the mean of the last one measured and the
// one before, so one slow second does not swing the hint. A backlog that
// grew (the burst still admitting) or stood still measures nothing: the
// pace of the last line that moved stands until one moves again.
func (l *Line) observe(sessionID int64, n int) float64 {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.sales[sessionID]
	if !ok {
		if len(l.sales) >= maxSales {
			l.forget(now)
		}
		l.sales[sessionID] = &pace{at: now, n: n}
		return 0
	}
	if dt := now.Sub(p.at); dt >= paceEvery {
		if n < p.n {
			measured := float64(p.n-n) / dt.Seconds()
			if p.perSecond > 0 {
				measured = (p.perSecond + measured) / 2
			}
			p.perSecond = measured
		}
		p.at, p.n = now, n
	}
	return p.perSecond
}

// forget drops the sales not counted for paceTTL, or every one if none
// is that idle: however many sales an API serves, their paces cost
// bounded memory, and a live sale's pace is measured again within two
// seconds.
func (l *Line) forget(now time.Time) {
	for id, p := range l.sales {
		if now.Sub(p.at) >= paceTTL {
			delete(l.sales, id)
		}
	}
	if len(l.sales) >= maxSales {
		clear(l.sales)
	}
}
