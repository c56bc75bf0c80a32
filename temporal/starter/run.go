package starter

import (
	"context"
	"time"

	"github.com/seckill/seckill"
)

// Offer hands an order over without waiting: false when the queue is full
// (the order's pending-start entry is its way to a start). An order
// already queued or in flight here is accepted and not queued twice.
func (s *Starter) Offer(req *seckill.OrderRequest) bool {
	s.mu.Lock()
	if _, ok := s.known[req.OrderNo]; ok {
		s.mu.Unlock()
		return true
	}
	if s.queued >= s.cfg.Queue {
		s.mu.Unlock()
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.StarterDropped.WithLabelValues(s.cfg.Name).Inc()
		}
		return false
	}
	s.pushLocked(item{req: req})
	s.mu.Unlock()
	s.signal()
	return true
}

// Run drains the queue until ctx ends; starts in flight then finish on
// their own deadline.
func (s *Starter) Run(ctx context.Context) {
	if h, ok := s.cfg.Gate.(Holder); ok {
		go s.hold(ctx, h)
	}
	again := time.NewTimer(time.Hour)
	again.Stop()
	for {
		s.mu.Lock()
		wait := time.Duration(0)
		s.yielding = false
		for s.inFlight < s.limit.Current() {
			if wait = s.yieldLocked(); wait > 0 {
				break
			}
			it, ok := s.popLocked()
			if !ok {
				break
			}
			s.inFlight++
			n := s.inFlight
			go s.start(it, n)
		}
		s.gaugesLocked()
		s.mu.Unlock()
		if wait > 0 {
			again.Reset(wait)
		}
		select {
		case <-ctx.Done():
			again.Stop()
			return
		case <-s.wake:
		case <-again.C:
		}
		again.Stop()
	}
}

// yieldLocked is how long to hold the next start for a busy front door
// (see Config.Busy and Config.Settle): zero to start now.
func (s *Starter) yieldLocked() time.Duration {
	if s.cfg.Busy == nil || s.cfg.Yield < 0 || s.queued == 0 {
		return 0
	}
	oldest := time.Time{}
	for _, id := range s.ring {
		if at := s.queues[id][0].at; oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	waited := time.Since(oldest)
	if waited < s.cfg.Settle {
		return s.cfg.Settle - waited
	}
	if !s.cfg.Busy() {
		return 0
	}
	left := s.cfg.Yield - waited
	if left <= 0 {
		return 0
	}
	s.yielding = true
	return min(left, yieldPoll)
}

func (s *Starter) start(it item, inFlight int) {
	req := it.req
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CallTimeout)
	defer cancel()
	sent := time.Now()
	started, err := s.cfg.Flow.Start(ctx, req)
	done := time.Now()
	m := s.cfg.Metrics
	if m != nil {
		m.WorkflowStart.Observe(done.Sub(sent).Seconds())
	}
	var res Result
	if err != nil {
		kind := Kind(err)
		if kind != KindOther {
			s.limit.Overloaded(sent, done)
		}
		if m != nil {
			m.WorkflowStartFailures.WithLabelValues(kind).Inc()
		}
		s.cfg.Log.Warn("workflow start failed; the order waits in the outbox for the next pass",
			"starter", s.cfg.Name, "order_no", req.OrderNo, "trace_id", req.TraceID, "kind", kind, "error", err)
		res.Err = err
	} else {
		s.limit.Succeeded(sent, done, inFlight)
		res.Started, res.Existed = started, !started
		gctx, gcancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.cfg.Gate.Started(gctx, req.SessionID, req.OrderNo)
		gcancel()
		if err != nil {
			// Harmless: the next outbox pass meets "already started".
			s.cfg.Log.Warn("could not clear the pending-start entry", "order_no", req.OrderNo, "error", err)
		}
	}
	s.mu.Lock()
	s.inFlight--
	delete(s.known, req.OrderNo)
	if err != nil {
		s.lastFailure = done
	} else {
		s.lastSuccess = done
	}
	s.mu.Unlock()
	if it.done != nil {
		it.done(res)
	}
	s.signal()
}

func (s *Starter) gauges() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gaugesLocked()
}

func (s *Starter) gaugesLocked() {
	m := s.cfg.Metrics
	if m == nil {
		return
	}
	m.StarterInFlight.WithLabelValues(s.cfg.Name).Set(float64(s.inFlight))
	m.StarterLimit.WithLabelValues(s.cfg.Name).Set(float64(s.limit.Current()))
	m.StarterQueue.WithLabelValues(s.cfg.Name).Set(float64(s.queued))
	yielding := 0.0
	if s.yielding {
		yielding = 1
	}
	m.StarterYielding.WithLabelValues(s.cfg.Name).Set(yielding)
}

// Drain waits until the queue is empty and no start is in flight, or ctx
// ends (what is left waits in the outbox); false when ctx ended first.
func (s *Starter) Drain(ctx context.Context) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		empty := s.queued == 0 && s.inFlight == 0
		s.mu.Unlock()
		if empty {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
