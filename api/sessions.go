package api

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill"
)

// SessionCache gives a session's metadata from the process's memory
// (sessions.Cache); an operator's change makes it forget the session.
type SessionCache interface {
	Get(ctx context.Context, id int64) (*seckill.Session, error)
	Forget(id int64)
}

// SessionStock reads a session's stock in Redis, and whether it was
// preheated.
type SessionStock interface {
	Stock(ctx context.Context, sessionID int64) (int, bool, error)
}

// SessionListing reads the sessions not yet ended, soonest first (MySQL).
type SessionListing interface {
	OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error)
}

// sessionJSON is the public shape of a session.
type sessionJSON = seckill.SessionView

func (s *Server) sessionView(ctx context.Context, sess *seckill.Session) (*sessionJSON, error) {
	stock, preheated, err := s.svc.Stock.Stock(ctx, sess.ID)
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

// pathSession is the session the path's {id} names.
func (s *Server) pathSession(c *fiber.Ctx) (*seckill.Session, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.svc.Sessions.Get(c.UserContext(), id)
}

// getSession: GET /api/v1/sessions/{id} (public).
func (s *Server) getSession(c *fiber.Ctx) error {
	sess, err := s.pathSession(c)
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
	sessions, err := s.svc.Listing.OpenSessions(ctx, now, listLimit)
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
