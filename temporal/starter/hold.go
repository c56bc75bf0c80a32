package starter

import (
	"context"
	"time"
)

// Holder renews the pending-start entries of the orders a starter holds
// (queued or in flight) as of at, so that another process's relay, which
// starts only entries older than its minimum age, leaves them to this
// starter. Without it, a backlog that takes longer than the worker relay's
// minimum age to drain is started a second time by the relay, through the
// task queue and in competition with this starter, and those orders' first
// workflow tasks wait in the task queue instead of coming straight back
// (docs/BENCHMARKS.md).
// A Gate that implements it is renewed every Config.HoldEvery; the
// renewal only touches entries that still exist, so it never brings a
// started order back. A starter that is making no progress (its starts
// fail, none has succeeded for HoldEvery) renews nothing: its orders age
// in the outbox until the worker's relay, which may well reach Temporal
// when this process cannot, takes them.
type Holder interface {
	Hold(ctx context.Context, sessionID int64, orderNos []string, at time.Time) error
}

// hold renews, every Config.HoldEvery, the pending-start entries of the orders
// queued or in flight here (see Holder).
func (s *Starter) hold(ctx context.Context, h Holder) {
	t := time.NewTicker(s.cfg.HoldEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if s.letGo(now) {
				continue
			}
			for id, nos := range s.held() {
				hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if err := h.Hold(hctx, id, nos, now); err != nil && ctx.Err() == nil {
					s.cfg.Log.Warn("could not renew the pending-start entries held here; the worker's relay may start them too (harmless: already started)",
						"starter", s.cfg.Name, "session_id", id, "orders", len(nos), "error", err)
				}
				cancel()
			}
		}
	}
}

// letGo tells whether the starter is stalled at now: its latest start
// failed and none succeeded for HoldEvery. Its holds are then not renewed
// (see Holder), and the change is logged once each way.
func (s *Starter) letGo(now time.Time) bool {
	s.mu.Lock()
	stalled := s.lastFailure.After(s.lastSuccess) && now.Sub(s.lastSuccess) >= s.cfg.HoldEvery
	changed := stalled != s.stalled
	s.stalled = stalled
	n, last := len(s.known), s.lastSuccess
	s.mu.Unlock()
	switch {
	case changed && stalled:
		s.cfg.Log.Warn("workflow starts are failing here: the orders this process holds are left to the worker's relay",
			"starter", s.cfg.Name, "orders", n, "last_success", last)
	case changed:
		s.cfg.Log.Info("workflow starts succeed again: this process holds its orders again", "starter", s.cfg.Name)
	}
	return stalled
}

// held lists, per session, the orders queued or in flight here.
func (s *Starter) held() map[int64][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64][]string{}
	for no, id := range s.known {
		out[id] = append(out[id], no)
	}
	return out
}
