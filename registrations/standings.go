package registrations

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// DefaultStandingsTTL is how old the desk's copy of a drawn sale's
// positions may be: a right passed on shows this much late at most, and
// each process reads the positions at most once per this.
const DefaultStandingsTTL = time.Second

// standings keeps each drawn sale's recorded positions in memory. Right
// after a draw every registrant asks for their result at once; answered
// from MySQL, each of those reads took the entry, the shopper's orders
// and a count of the waiting positions ahead, while the same MySQL
// created the winners' orders. From this copy a result costs the
// registration's primary-key read, and a lapsed right's holder one
// order lookup (a used right still reads WON).
type standings struct {
	ttl   time.Duration
	load  func(ctx context.Context, sessionID int64) ([]seckill.DrawEntry, error)
	group singleflight.Group

	mu    sync.Mutex
	cache map[int64]*drawn
}

// drawn is one sale's positions as loaded at one instant.
type drawn struct {
	loaded time.Time
	byUser map[int64]standing
}

// standing is a recorded position and, for one still without a right,
// its 1-based place among those waiting (what WAITLISTED shows).
type standing struct {
	entry   seckill.DrawEntry
	waiting int
}

func (s *standings) get(ctx context.Context, sessionID int64, now time.Time) (*drawn, error) {
	s.mu.Lock()
	d := s.cache[sessionID]
	s.mu.Unlock()
	if d != nil && now.Sub(d.loaded) < s.ttl {
		return d, nil
	}
	v, err, _ := s.group.Do(strconv.FormatInt(sessionID, 10), func() (any, error) {
		// Detached from the request that happened to trigger the load:
		// the others waiting on it must not fail because that one left.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		entries, err := s.load(lctx, sessionID)
		if err != nil {
			return nil, err
		}
		d := &drawn{loaded: now, byUser: make(map[int64]standing, len(entries))}
		waiting := 0
		for _, e := range entries { // in position order
			st := standing{entry: e}
			if e.RightUntil.IsZero() {
				waiting++
				st.waiting = waiting
			}
			d.byUser[e.UserID] = st
		}
		s.mu.Lock()
		if s.cache == nil {
			s.cache = map[int64]*drawn{}
		}
		// A sale nobody asked about for a minute leaves memory.
		for id, old := range s.cache {
			if now.Sub(old.loaded) > time.Minute {
				delete(s.cache, id)
			}
		}
		s.cache[sessionID] = d
		s.mu.Unlock()
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*drawn), nil
}
