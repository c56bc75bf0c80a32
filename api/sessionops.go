package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// addStockBody is the body of POST /admin/v1/sessions/{id}/stock.
type addStockBody struct {
	Add *int `json:"add"`
	// SKUID names the item of a sale of several that gets the units.
	SKUID *int64 `json:"sku_id"`
}

// SessionAudit reads a session's row (NOT_FOUND for none) and the
// changes made to it, oldest first (MySQL).
type SessionAudit interface {
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
	SessionAudit(ctx context.Context, sessionID int64) ([]seckill.SessionChange, error)
}

// actor is the authenticated operator, as the audit records them.
func actor(c *fiber.Ctx) (string, seckill.Role) {
	op := operatorOf(c)
	return op.Name, op.Role
}

// changeSession is every admin change of a session: it builds the
// SessionChange from the request, has the session controls apply it
// (sessions.Controls.Change), and answers the session as it is now. Every API sees the change within its session cache's TTL (a second):
// orders are refused PAUSED or ENDED from then on.
func (s *Server) changeSession(action seckill.SessionAction) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := pathID(c, "id")
		if err != nil {
			return err
		}
		requestID, err := idempotencyKey(c)
		if err != nil {
			return err
		}
		if requestID == "" {
			requestID = traceID(c)
		}
		ch := &seckill.SessionChange{SessionID: id, Action: action,
			From: s.clientIP(c).String(), RequestID: requestID, TraceID: traceID(c)}
		ch.Actor, ch.ActorRole = actor(c)
		switch action {
		case seckill.ActionAddStock:
			var body addStockBody
			if err := decodeStrict(c.Body(), &body, false); err != nil {
				return err
			}
			if body.Add == nil {
				return seckill.Errorf(seckill.EINVALID, "field \"add\" is required")
			}
			ch.Add = *body.Add
			if body.SKUID != nil {
				ch.SKUID = *body.SKUID
			}
		case seckill.ActionUpdate:
			ch.Update = &seckill.SessionUpdate{}
			if err := decodeStrict(c.Body(), ch.Update, false); err != nil {
				return err
			}
		default:
			// pause, resume, end: nothing to say but the verb.
			var none struct{}
			if err := decodeStrict(c.Body(), &none, true); err != nil {
				return err
			}
		}
		ctx := c.UserContext()
		done, err := s.svc.Controls.Change(ctx, ch)
		if err != nil {
			return err
		}
		s.svc.Sessions.Forget(id)
		out := fiber.Map{"applied": done.Applied}
		if done.RedisStock != nil {
			s.svc.Admission.SoldOut.Clear(id)
			out["redis_stock"] = *done.RedisStock
		}
		v, err := s.svc.Views.View(ctx, done.Session)
		if err != nil {
			return err
		}
		out["session"] = v
		return c.JSON(out)
	}
}

// sessionAudit: GET /admin/v1/sessions/{id}/audit, the changes oldest first.
func (s *Server) sessionAudit(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if _, _, err := s.svc.Audit.Session(c.UserContext(), id); err != nil {
		return err
	}
	changes, err := s.svc.Audit.SessionAudit(c.UserContext(), id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"session_id": id, "changes": changes})
}
