package starter

import (
	"context"
	"time"

	"github.com/seckill/seckill"
)

// Do starts the given orders through the queue (fairly with everything
// else queued, past the queue bound: the caller holds them anyway) and
// waits for their results, in order, until ctx ends (an order not
// finished by then reports ctx's error; its start still goes on).
func (s *Starter) Do(ctx context.Context, reqs []*seckill.OrderRequest) []Result {
	out := make([]Result, len(reqs))
	results := make(chan struct {
		i int
		r Result
	}, len(reqs))
	waiting := 0
	s.mu.Lock()
	for i, req := range reqs {
		if _, ok := s.known[req.OrderNo]; ok {
			out[i].Busy = true
			continue
		}
		i := i
		s.pushLocked(item{req: req, done: func(r Result) {
			results <- struct {
				i int
				r Result
			}{i, r}
		}})
		waiting++
	}
	s.mu.Unlock()
	s.signal()
	pending := map[int]bool{}
	for i := range reqs {
		if !out[i].Busy {
			pending[i] = true
		}
	}
	for ; waiting > 0; waiting-- {
		select {
		case r := <-results:
			out[r.i] = r.r
			delete(pending, r.i)
		case <-ctx.Done():
			for i := range pending {
				out[i].Err = ctx.Err()
			}
			return out
		}
	}
	return out
}

func (s *Starter) pushLocked(it item) {
	it.at = time.Now()
	id := it.req.SessionID
	if len(s.queues[id]) == 0 {
		s.ring = append(s.ring, id)
	}
	s.queues[id] = append(s.queues[id], it)
	s.known[it.req.OrderNo] = it.req.SessionID
	s.queued++
}

// popLocked takes the next item round-robin across sessions.
func (s *Starter) popLocked() (item, bool) {
	if len(s.ring) == 0 {
		return item{}, false
	}
	if s.next >= len(s.ring) {
		s.next = 0
	}
	id := s.ring[s.next]
	q := s.queues[id]
	it := q[0]
	q[0] = item{}
	q = q[1:]
	if len(q) == 0 {
		delete(s.queues, id)
		s.ring = append(s.ring[:s.next], s.ring[s.next+1:]...)
	} else {
		s.queues[id] = q
		s.next++
	}
	s.queued--
	return it, true
}

func (s *Starter) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
