package api

import (
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// createSessionBody is the body of POST /admin/v1/sessions. Pointers tell a
// missing field from a zero one.
type createSessionBody struct {
	SKUID      *int64  `json:"sku_id"`
	Title      *string `json:"title"`
	PriceCents *int64  `json:"price_cents"`
	// Currency is optional: the deployment's SECKILL_CURRENCY when absent.
	Currency     *string `json:"currency"`
	Stock        *int    `json:"stock"`
	PerUserLimit *int    `json:"per_user_limit"`
	StartAt      *string `json:"start_at"`
	EndAt        *string `json:"end_at"`
	// RequireTicket and RequireCaptcha are optional (default false); a
	// captcha implies the ticket.
	RequireTicket  *bool `json:"require_ticket"`
	RequireCaptcha *bool `json:"require_captcha"`
}

func (b *createSessionBody) session() (*seckill.Session, error) {
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"sku_id", b.SKUID != nil}, {"title", b.Title != nil}, {"price_cents", b.PriceCents != nil},
		{"stock", b.Stock != nil}, {"per_user_limit", b.PerUserLimit != nil},
		{"start_at", b.StartAt != nil}, {"end_at", b.EndAt != nil},
	} {
		if !f.present {
			return nil, seckill.Errorf(seckill.EINVALID, "field %q is required", f.name)
		}
	}
	start, err := time.Parse(time.RFC3339, *b.StartAt)
	if err != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"start_at\" must be an RFC 3339 time")
	}
	end, err := time.Parse(time.RFC3339, *b.EndAt)
	if err != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"end_at\" must be an RFC 3339 time")
	}
	s := &seckill.Session{
		SKUID: *b.SKUID, Title: *b.Title, PriceCents: *b.PriceCents, TotalStock: *b.Stock,
		PerUserLimit: *b.PerUserLimit, StartAt: start.UTC().Truncate(time.Millisecond), EndAt: end.UTC().Truncate(time.Millisecond),
	}
	if b.Currency != nil {
		s.Currency = *b.Currency
	}
	if b.RequireTicket != nil {
		s.RequireTicket = *b.RequireTicket
	}
	if b.RequireCaptcha != nil && *b.RequireCaptcha {
		s.RequireCaptcha, s.RequireTicket = true, true
	}
	return s, s.Validate()
}

// createSession: POST /admin/v1/sessions.
func (s *Server) createSession(c *fiber.Ctx) error {
	var body createSessionBody
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	sess, err := body.session()
	if err != nil {
		return err
	}
	if err := s.store.CreateSession(c.UserContext(), sess); err != nil {
		return err
	}
	s.sessions.forget(sess.ID)
	s.log.Info("session created", "trace_id", traceID(c), "session_id", sess.ID, "stock", sess.TotalStock)
	v, err := s.sessionView(c.UserContext(), sess)
	if err != nil {
		return err
	}
	// Its life preheats it before the start. Should Temporal not answer
	// now, the worker starts the life of every open session that has none
	// (within a minute), and a manual preheat works regardless.
	if _, err := s.flow.StartSession(c.UserContext(), sess.ID); err != nil {
		s.log.Warn("session life not started; the worker will", "trace_id", traceID(c), "session_id", sess.ID, "error", err)
	}
	return c.Status(fiber.StatusCreated).JSON(v)
}

// preheat: POST /admin/v1/sessions/{id}/preheat[?force=true].
//
// Without force it loads the database stock into Redis once and is
// idempotent: live stock is never overwritten, and a session that already
// has orders cannot be preheated blind (409). With force it rebuilds the
// Redis state from MySQL: stock = database stock, one reservation per order
// that holds stock (for a Redis that lost its data).
func (s *Server) preheat(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	force := false
	if raw := c.Query("force"); raw != "" {
		if force, err = strconv.ParseBool(raw); err != nil {
			return seckill.Errorf(seckill.EINVALID, "force must be true or false")
		}
	}
	ctx := c.UserContext()
	sess, dbStock, applied, err := s.store.PreheatFigures(ctx, id)
	if err != nil {
		return err
	}
	if !s.cfg.Now().Before(sess.EndAt) {
		// Its life retires an ended session's Redis state (no admission
		// can reach it then); loading it again would put it back where
		// the relays look, with nothing left to retire it.
		return seckill.Errorf(seckill.ECONFLICT, "session %d ended at %s: there is nothing to preheat", id, sess.EndAt.Format(time.RFC3339))
	}
	defer s.sessions.forget(id)
	defer s.soldOut.clear(id)
	if force {
		holdings, err := s.store.LiveHoldings(ctx, id)
		if err != nil {
			return err
		}
		if err := s.gate.Rebuild(ctx, id, dbStock, holdings); err != nil {
			return err
		}
		s.log.Warn("session stock rebuilt from MySQL", "trace_id", traceID(c), "session_id", id,
			"stock", dbStock, "holdings", len(holdings))
		return c.JSON(fiber.Map{"stock": dbStock, "rebuilt": true, "reservations": len(holdings)})
	}
	if live, preheated, err := s.gate.Stock(ctx, id); err != nil {
		return err
	} else if preheated {
		return c.JSON(fiber.Map{"stock": live})
	}
	if dbStock != sess.TotalStock {
		return seckill.Errorf(seckill.ECONFLICT,
			"session %d already has orders but no Redis stock; rebuild it with ?force=true", id)
	}
	live, err := s.gate.PreheatHolding(ctx, id, dbStock, applied)
	if err != nil {
		return err
	}
	s.log.Info("session preheated", "trace_id", traceID(c), "session_id", id, "stock", live)
	return c.JSON(fiber.Map{"stock": live})
}

// reconcile: GET /admin/v1/sessions/{id}/reconcile[?repair=true].
func (s *Server) reconcile(c *fiber.Ctx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	repair := false
	if raw := c.Query("repair"); raw != "" {
		if repair, err = strconv.ParseBool(raw); err != nil {
			return seckill.Errorf(seckill.EINVALID, "repair must be true or false")
		}
	}
	if !repair {
		r, err := seckill.ReconcilePolicy{PayTimeout: s.cfg.PayTimeout, SweepGrace: s.cfg.SweepGrace}.Reconcile(c.UserContext(), s.store, s.gate, id)
		if err != nil {
			return err
		}
		return c.JSON(r)
	}
	r, rep, err := seckill.RepairRedis(c.UserContext(), s.store, s.gate, id)
	if err != nil {
		return err
	}
	s.soldOut.clear(id)
	s.log.Warn("reconcile repair", "trace_id", traceID(c), "session_id", id, "repaired", rep.Repaired, "changes", rep.Changes, "skipped", rep.Skipped)
	return c.JSON(struct {
		*seckill.Report
		Repair *seckill.Repair `json:"repair"`
	}{r, rep})
}
