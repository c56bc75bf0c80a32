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
)

// sessionCache keeps session metadata in process memory so that the sale
// window, the per-user limit and unknown ids are decided without a database
// round trip. Unknown ids are cached too (briefly), so a flood of requests
// for a made-up session cannot reach MySQL either; concurrent misses for one
// id share one load.
type sessionCache struct {
	ttl   time.Duration
	load  func(ctx context.Context, id int64) (*seckill.Session, error)
	group singleflight.Group

	mu sync.RWMutex
	m  map[int64]cachedSession
}

type cachedSession struct {
	s       *seckill.Session // nil: known not to exist
	expires time.Time
}

func newSessionCache(ttl time.Duration, load func(context.Context, int64) (*seckill.Session, error)) *sessionCache {
	return &sessionCache{ttl: ttl, load: load, m: map[int64]cachedSession{}}
}

// get returns the session, or NOT_FOUND.
func (c *sessionCache) get(ctx context.Context, id int64) (*seckill.Session, error) {
	now := time.Now()
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		v, err, _ := c.group.Do(strconv.FormatInt(id, 10), func() (any, error) {
			s, err := c.load(ctx, id)
			if err != nil && seckill.ErrorCode(err) != seckill.ENOTFOUND {
				return nil, err
			}
			e := cachedSession{s: s, expires: time.Now().Add(c.ttl)}
			c.mu.Lock()
			c.m[id] = e
			c.mu.Unlock()
			return e, nil
		})
		if err != nil {
			if ok && e.s != nil {
				return e.s, nil // serve stale metadata while MySQL is away
			}
			return nil, seckill.Errorf(seckill.EUNAVAILABLE, "session store unavailable, retry shortly")
		}
		e = v.(cachedSession)
	}
	if e.s == nil {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	}
	return e.s, nil
}

// forget drops a session so that the next read loads it again.
func (c *sessionCache) forget(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// sessionJSON is the public shape of a session.
type sessionJSON struct {
	*seckill.Session
	RemainingStock int                  `json:"remaining_stock"`
	State          seckill.SessionState `json:"state"`
}

func (s *Server) sessionView(ctx context.Context, sess *seckill.Session) (*sessionJSON, error) {
	stock, preheated, err := s.gate.Stock(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	if !preheated {
		// Not on sale yet: nothing can be bought, and nothing was sold.
		stock = 0
	}
	return &sessionJSON{Session: sess, RemainingStock: stock, State: sess.StateAt(s.cfg.Now(), stock)}, nil
}

// getSession: GET /api/v1/sessions/{id} (public).
func (s *Server) getSession(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	sess, err := s.sessions.get(c.UserContext(), id)
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
