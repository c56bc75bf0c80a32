package api

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/sessions"
)

// createSession: POST /admin/v1/sessions.
func (s *Server) createSession(c *fiber.Ctx) error {
	var body seckill.SessionDefinition
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	sess, err := body.Session(s.cfg.Now())
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	by := &seckill.SessionChange{From: s.clientIP(c).String(), RequestID: traceID(c), TraceID: traceID(c)}
	by.Actor, by.ActorRole = actor(c)
	if key != "" {
		by.RequestID, by.Fingerprint = key, body.Fingerprint()
	}
	if err := s.svc.Controls.Create(c.UserContext(), sess, by); err != nil {
		return err
	}
	s.svc.Sessions.Forget(sess.ID)
	v, err := s.svc.Views.View(c.UserContext(), sess)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// preheat: POST /admin/v1/sessions/{id}/preheat[?force=true]
// (sessions.Controls.Preheat: once without force, a rebuild from MySQL
// with it).
func (s *Server) preheat(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	force, err := queryBool(c, "force")
	if err != nil {
		return err
	}
	p, err := s.svc.Controls.Preheat(c.UserContext(), id, force, traceID(c))
	// Whatever it did, the next reads see it.
	s.svc.Sessions.Forget(id)
	s.svc.Admission.SoldOut.Clear(id)
	if err != nil {
		return err
	}
	return c.JSON(p)
}

// SessionControls are the operator's controls of a session
// (sessions.Controls): create, change, preheat.
type SessionControls interface {
	Create(ctx context.Context, sess *seckill.Session, by *seckill.SessionChange) error
	Change(ctx context.Context, ch *seckill.SessionChange) (*sessions.Changed, error)
	Preheat(ctx context.Context, id int64, force bool, traceID string) (*sessions.Preheated, error)
}

// Reconciler checks one session's MySQL and Redis state against the
// invariants (seckill.ReconcilePolicy.Reconcile, with the API's pay
// timeout and sweep grace), and repairs Redis from MySQL
// (seckill.RepairRedis).
type Reconciler interface {
	Reconcile(ctx context.Context, sessionID int64) (*seckill.Report, error)
	RepairRedis(ctx context.Context, sessionID int64) (*seckill.Report, *seckill.Repair, error)
}

// reconcile: GET /admin/v1/sessions/{id}/reconcile, the report; it never
// changes anything (the repair is its own route).
func (s *Server) reconcile(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	r, err := s.svc.Reconcile.Reconcile(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

// repair: POST /admin/v1/sessions/{id}/repair, Redis rebuilt from MySQL
// (seckill.RepairRedis), and the report after it.
func (s *Server) repair(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeStrict(c.Body(), &none, true); err != nil {
		return err
	}
	r, rep, err := s.svc.Reconcile.RepairRedis(c.UserContext(), id)
	if err != nil {
		return err
	}
	s.svc.Admission.SoldOut.Clear(id)
	s.log.Warn("reconcile repair", "trace_id", traceID(c), "session_id", id, "repaired", rep.Repaired, "changes", rep.Changes, "skipped", rep.Skipped)
	return c.JSON(struct {
		*seckill.Report
		Repair *seckill.Repair `json:"repair"`
	}{r, rep})
}

// queryBool is an optional boolean query parameter (false when absent).
func queryBool(c *fiber.Ctx, name string) (bool, error) {
	raw := c.Query(name)
	if raw == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(raw)
	if err != nil {
		return false, seckill.Errorf(seckill.EINVALID, "%s must be true or false", name)
	}
	return v, nil
}

// Blocklist is the admin's blocklist, in MySQL; every API keeps a copy
// in memory (admission's), refreshed every second.
type Blocklist interface {
	Block(ctx context.Context, userID int64, reason string) error
	Unblock(ctx context.Context, userID int64) error
}

// setBlocked: PUT /admin/v1/blocklist/{user_id} (blocked) and DELETE
// (unblocked); this process's copy is refreshed before the answer.
func (s *Server) setBlocked(blocked bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := pathID(c, "user_id")
		if err != nil {
			return err
		}
		name, role := actor(c)
		if blocked {
			err = s.svc.Blocklist.Block(c.UserContext(), id, fmt.Sprintf("by %s (%s)", name, role))
		} else {
			err = s.svc.Blocklist.Unblock(c.UserContext(), id)
		}
		if err != nil {
			return err
		}
		s.log.Info("blocklist changed", "trace_id", traceID(c), "user_id", id, "blocked", blocked, "actor", name, "role", role)
		if err := s.svc.Admission.RefreshBlocklist(c.UserContext()); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"user_id": id, "blocked": blocked})
	}
}
