package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

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

// sessionView is sess as a shopper sees it (sessions.Views).
func (s *Server) sessionView(ctx context.Context, sess *seckill.Session) (*seckill.SessionView, error) {
	return s.views.View(ctx, sess)
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

// listSessions: GET /api/v1/sessions (public). The answer may be up to a
// second old; shared caches may keep it that long too.
func (s *Server) listSessions(c *fiber.Ctx) error {
	body, err := s.views.List(c.UserContext())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}
