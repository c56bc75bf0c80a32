package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// SessionCache gives a session's metadata from the process's memory
// (sessions.Cache); an operator's change makes it forget the session.
type SessionCache interface {
	Get(ctx context.Context, id int64) (*seckill.Session, error)
	Forget(id int64)
}

// SessionViews are sessions as shoppers see them (sessions.Views): one
// with its stock and state, and the public list.
type SessionViews interface {
	View(ctx context.Context, sess *seckill.Session) (*seckill.SessionView, error)
	List(ctx context.Context) ([]byte, error)
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
	v, err := s.svc.Views.View(c.UserContext(), sess)
	if err != nil {
		return err
	}
	return c.JSON(v)
}

// listSessions: GET /api/v1/sessions (public). The answer may be up to a
// second old; shared caches may keep it that long too.
func (s *Server) listSessions(c *fiber.Ctx) error {
	body, err := s.svc.Views.List(c.UserContext())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=1")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}
