package api

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// SessionRows reads sessions from MySQL: one with its database stock,
// the open ones for the list, and the audit of its changes.
type SessionRows interface {
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
	OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error)
	SessionAudit(ctx context.Context, sessionID int64) ([]seckill.SessionChange, error)
}

// LiveStock reads a session's stock in Redis: alone (and whether it was
// preheated), or with Redis's clock and its latest keyed win.
type LiveStock interface {
	Stock(ctx context.Context, sessionID int64) (int, bool, error)
	StockMark(ctx context.Context, sessionID int64) (seckill.StockMark, error)
}

// sessionCache keeps session metadata in process memory so that the sale
// window, the per-user limit and unknown ids are decided without a database
// round trip. Sessions that exist are kept for ttl (and served stale while
// MySQL is away); unknown ids are remembered briefly in a bounded cache (see
// unknown.go), so a flood of requests for made-up sessions reaches MySQL at
// most once per id per unknownTTL and costs bounded memory; concurrent
// misses for one id share one load.
type sessionCache struct {
	ttl     time.Duration
	load    func(ctx context.Context, id int64) (*seckill.Session, error)
	group   singleflight.Group
	unknown *expiring.Map[int64, struct{}]

	mu sync.RWMutex
	m  map[int64]cachedSession // sessions that exist: bounded by the table
}

type cachedSession struct {
	s       *seckill.Session
	expires time.Time
}

func newSessionCache(ttl time.Duration, load func(context.Context, int64) (*seckill.Session, error)) *sessionCache {
	return &sessionCache{ttl: ttl, load: load, m: map[int64]cachedSession{},
		unknown: expiring.New[int64, struct{}](maxUnknown)}
}

func sessionNotFound(id int64) error {
	return seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
}

// cached is what memory says about id: known when the session exists (e
// holds it), and fresh when that answer, or a remembered "not found", is
// recent enough to give without a load.
func (c *sessionCache) cached(id int64, now time.Time) (e cachedSession, known, fresh bool) {
	c.mu.RLock()
	e, known = c.m[id]
	c.mu.RUnlock()
	if known {
		return e, true, now.Before(e.expires)
	}
	_, fresh = c.unknown.Get(id, now)
	return cachedSession{}, false, fresh
}

// Get returns the session, or NOT_FOUND (exported for the services that
// read the API's cache: payments.SessionCache).
func (c *sessionCache) Get(ctx context.Context, id int64) (*seckill.Session, error) {
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
		s, err := c.load(lctx, id)
		switch {
		case seckill.ErrorCode(err) == seckill.ENOTFOUND:
			c.mu.Lock()
			delete(c.m, id)
			c.mu.Unlock()
			c.unknown.Put(id, struct{}{}, time.Now().Add(unknownTTL))
			return (*seckill.Session)(nil), nil
		case err != nil:
			return nil, err
		}
		c.mu.Lock()
		c.m[id] = cachedSession{s: s, expires: time.Now().Add(c.ttl)}
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

// forget drops a session (known or unknown) so that the next read loads it
// again.
func (c *sessionCache) forget(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
	c.unknown.Remove(id)
}

// sessionJSON is the public shape of a session.
type sessionJSON = seckill.SessionView

func (s *Server) sessionView(ctx context.Context, sess *seckill.Session) (*sessionJSON, error) {
	stock, preheated, err := s.gate.Stock(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	state := sess.StateAt(s.cfg.Now(), stock)
	if !preheated {
		// Not loaded into Redis: nothing can be bought, and nothing was
		// sold. In its window that is PREPARING (its life preheats it, or
		// an operator must), never SOLD_OUT with stock in MySQL.
		stock = 0
		if state == seckill.SessionActive || state == seckill.SessionSoldOut {
			state = seckill.SessionPreparing
		}
	}
	return &sessionJSON{Session: sess, RemainingStock: stock, State: state}, nil
}

// getSession: GET /api/v1/sessions/{id} (public).
func (s *Server) getSession(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	sess, err := s.sessions.Get(c.UserContext(), id)
	if err != nil {
		return err
	}
	v, err := s.sessionView(c.UserContext(), sess)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// listLimit bounds the public session list: a shop page, not a catalogue.
const listLimit = 20

// sessionList is the public list of sessions not yet ended, kept in process
// memory as the encoded answer: under a sale's load every shopper's page
// asks for it, so at most one load (one MySQL query and one Redis read per
// listed session) runs per TTL, concurrent misses share it, and a failed
// load keeps serving the last good answer.
type sessionList struct {
	ttl   time.Duration
	load  func(ctx context.Context) ([]byte, error)
	group singleflight.Group

	mu      sync.RWMutex
	body    []byte
	expires time.Time
}

func (l *sessionList) get(ctx context.Context) ([]byte, error) {
	l.mu.RLock()
	body, expires := l.body, l.expires
	l.mu.RUnlock()
	if body != nil && time.Now().Before(expires) {
		return body, nil
	}
	v, err, _ := l.group.Do("list", func() (any, error) {
		// Detached from the request that happened to trigger the load: the
		// others waiting on it must not fail because that one went away.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		b, err := l.load(lctx)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.body, l.expires = b, time.Now().Add(l.ttl)
		l.mu.Unlock()
		return b, nil
	})
	if err != nil {
		if body != nil {
			return body, nil
		}
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "sessions are unavailable, retry shortly")
	}
	return v.([]byte), nil
}

// loadSessionList builds the list answer: sessions not ended, soonest
// first, each in the shape of GET /api/v1/sessions/{id}.
func (s *Server) loadSessionList(ctx context.Context) ([]byte, error) {
	now := s.cfg.Now()
	sessions, err := s.store.OpenSessions(ctx, now, listLimit)
	if err != nil {
		return nil, err
	}
	views := make([]*sessionJSON, 0, len(sessions))
	for _, sess := range sessions {
		v, err := s.sessionView(ctx, sess)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	return json.Marshal(struct {
		Sessions []*sessionJSON `json:"sessions"`
	}{views})
}

// listSessions: GET /api/v1/sessions (public). The answer may be up to a
// second old; shared caches may keep it that long too.
func (s *Server) listSessions(c *fiber.Ctx) error {
	body, err := s.list.get(c.UserContext())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}
