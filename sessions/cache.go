package sessions

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// Session ids are chosen by the client, so each made-up one must not cost
// a database query per request nor memory that grows with every one ever
// tried. Their "not found" is remembered for unknownTTL, at most
// maxUnknown of them (the oldest go first), and concurrent lookups of one
// id share one query. A second is also what an admin change may take to
// reach every API process, so a session created right after someone asked
// for its id is not hidden for longer than that.
const (
	unknownTTL = time.Second
	maxUnknown = 1 << 16
	// lookupTimeout bounds a shared load, detached from the request that
	// started it: the others waiting on it must not fail because that one
	// went away.
	lookupTimeout = 3 * time.Second
)

// Cache keeps session metadata in process memory so that the sale
// window, the per-user limit and unknown ids are decided without a database
// round trip. Sessions that exist are kept for ttl (and served stale while
// MySQL is away); unknown ids are remembered briefly in a bounded cache, so
// a flood of requests for made-up sessions reaches MySQL at most once per
// id per unknownTTL and costs bounded memory; concurrent misses for one id
// share one load.
type Cache struct {
	ttl   time.Duration
	load  func(ctx context.Context, id int64) (*seckill.Session, error)
	group singleflight.Group
	// Unknown holds the ids MySQL did not know a moment ago.
	Unknown *expiring.Map[int64, struct{}]

	mu sync.RWMutex
	m  map[int64]cachedSession // sessions that exist: bounded by the table
	// forgets counts Forget calls: a load that began before one (it may
	// have read the row before the change it forgets) answers the callers
	// that joined it before, but is not kept.
	forgets uint64
}

type cachedSession struct {
	s       *seckill.Session
	expires time.Time
}

// NewCache builds a Cache whose sessions live ttl, loaded by load.
func NewCache(ttl time.Duration, load func(context.Context, int64) (*seckill.Session, error)) *Cache {
	return &Cache{ttl: ttl, load: load, m: map[int64]cachedSession{},
		Unknown: expiring.New[int64, struct{}](maxUnknown)}
}

func sessionNotFound(id int64) error {
	return seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
}

// cached is what memory says about id: known when the session exists (e
// holds it), and fresh when that answer, or a remembered "not found", is
// recent enough to give without a load.
func (c *Cache) cached(id int64, now time.Time) (e cachedSession, known, fresh bool) {
	c.mu.RLock()
	e, known = c.m[id]
	c.mu.RUnlock()
	if known {
		return e, true, now.Before(e.expires)
	}
	_, fresh = c.Unknown.Get(id, now)
	return cachedSession{}, false, fresh
}

// Get returns the session, or NOT_FOUND.
func (c *Cache) Get(ctx context.Context, id int64) (*seckill.Session, error) {
	e, known, fresh := c.cached(id, time.Now())
	if fresh {
		if !known {
			return nil, sessionNotFound(id)
		}
		return e.s, nil
	}
	v, err, _ := c.group.Do(strconv.FormatInt(id, 10), func() (any, error) {
		// A load that finished just before this one started has answered.
		if e, _, fresh := c.cached(id, time.Now()); fresh {
			return e.s, nil
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		c.mu.RLock()
		gen := c.forgets
		c.mu.RUnlock()
		s, err := c.load(lctx, id)
		switch {
		case seckill.ErrorCode(err) == seckill.ENOTFOUND:
			c.mu.Lock()
			delete(c.m, id)
			c.mu.Unlock()
			c.Unknown.Put(id, struct{}{}, time.Now().Add(unknownTTL))
			return (*seckill.Session)(nil), nil
		case err != nil:
			return nil, err
		}
		c.mu.Lock()
		if c.forgets == gen {
			c.m[id] = cachedSession{s: s, expires: time.Now().Add(c.ttl)}
		}
		c.mu.Unlock()
		return s, nil
	})
	if err != nil {
		if known {
			return e.s, nil // serve stale metadata while MySQL is away
		}
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "session store unavailable, retry shortly")
	}
	s := v.(*seckill.Session)
	if s == nil {
		return nil, sessionNotFound(id)
	}
	return s, nil
}

// Forget drops a session (known or unknown) so that the next read loads it
// again.
func (c *Cache) Forget(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.forgets++
	c.mu.Unlock()
	// A Get from now on loads afresh rather than joining a load in flight.
	c.group.Forget(strconv.FormatInt(id, 10))
	c.Unknown.Remove(id)
}
