package registrations

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// standings keeps each drawn sale's recorded positions in memory. Right
// after a draw every registrant asks for their result at once; answered
// from MySQL, each of those reads took the entry, the shopper's orders
// and a count of the waiting positions ahead, while the same MySQL
// created the winners' orders. From this copy a result costs the
// registration's primary-key read (and, for a granted right, a look at
// the rights hash admission checks). The copy is reread only when the
// sale's rights_version moves (a pass granted rights, a resume extended
// them), which each API learns from its cached session: a right passed
// on shows as late as the session cache, and a sale whose rights do not
// move is read once.
type standings struct {
	load  func(ctx context.Context, sessionID int64) ([]seckill.DrawEntry, error)
	group singleflight.Group

	mu    sync.Mutex
	cache map[int64]*drawn
}

// drawn is one sale's positions as loaded at one version of its rights.
type drawn struct {
	version int
	asked   time.Time // the last answer from it, to let an idle sale go
	byUser  map[int64]standing
}

// standing is a recorded position and, for one still without a right,
// its 1-based place among those waiting for its item (what WAITLISTED
// shows).
type standing struct {
	entry   seckill.DrawEntry
	waiting int
}

func (s *standings) get(ctx context.Context, sessionID int64, version int, now time.Time) (*drawn, error) {
	if d := s.cached(sessionID, version, now); d != nil {
		return d, nil
	}
	key := strconv.FormatInt(sessionID, 10) + ":" + strconv.Itoa(version)
	v, err, _ := s.group.Do(key, func() (any, error) {
		// Looked for again inside the flight: a caller that missed the
		// cache just before an earlier flight stored its copy would
		// otherwise load a second time.
		if d := s.cached(sessionID, version, now); d != nil {
			return d, nil
		}
		// Detached from the request that happened to trigger the load:
		// the others waiting on it must not fail because that one left.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		entries, err := s.load(lctx, sessionID)
		if err != nil {
			return nil, err
		}
		d := &drawn{version: version, asked: now, byUser: make(map[int64]standing, len(entries))}
		waiting := map[int64]int{}  // by item
		for _, e := range entries { // in (item, position) order
			st := standing{entry: e}
			if e.RightUntil.IsZero() {
				waiting[e.SKUID]++
				st.waiting = waiting[e.SKUID]
			}
			d.byUser[e.UserID] = st
		}
		s.mu.Lock()
		if s.cache == nil {
			s.cache = map[int64]*drawn{}
		}
		// A sale nobody asked about for a minute leaves memory.
		for id, old := range s.cache {
			if now.Sub(old.asked) > time.Minute {
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

// cached is the sale's copy at version, if memory holds it, marked asked.
func (s *standings) cached(sessionID int64, version int, now time.Time) *drawn {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.cache[sessionID]
	if d == nil || d.version != version {
		return nil
	}
	d.asked = now
	return d
}
