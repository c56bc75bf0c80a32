package api

import (
	"context"
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
