package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/sessions"
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
	// Mode is first_come (default), reserved or draw; a reserved or draw
	// sale registers shoppers from RegisterFrom (default: now) until
	// RegisterUntil (default: start_at); a draw's rights last
	// RightTTLSeconds (default seckill.DefaultRightTTL).
	Mode            *string `json:"mode"`
	RegisterFrom    *string `json:"register_from"`
	RegisterUntil   *string `json:"register_until"`
	RightTTLSeconds *int    `json:"right_ttl_seconds"`
	// Items make a sale of several items (sizes), in place of sku_id,
	// price_cents and stock.
	Items []itemBody `json:"items"`
}

// itemBody is one item of a sale of several.
type itemBody struct {
	SKUID      *int64  `json:"sku_id"`
	Title      *string `json:"title"`
	PriceCents *int64  `json:"price_cents"`
	Stock      *int    `json:"stock"`
}

// items are the body's items, or the single-SKU sale's one.
func (b *createSessionBody) items() ([]seckill.Item, error) {
	if b.Items == nil {
		for _, f := range []struct {
			name    string
			present bool
		}{{"sku_id", b.SKUID != nil}, {"price_cents", b.PriceCents != nil}, {"stock", b.Stock != nil}} {
			if !f.present {
				return nil, seckill.Errorf(seckill.EINVALID, "field %q is required (or items, for a sale of several)", f.name)
			}
		}
		return []seckill.Item{{SKUID: *b.SKUID, Title: *b.Title, PriceCents: *b.PriceCents, TotalStock: *b.Stock}}, nil
	}
	if b.SKUID != nil || b.PriceCents != nil || b.Stock != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "a sale of items takes sku_id, price_cents and stock in each item, not beside them")
	}
	if len(b.Items) == 0 || len(b.Items) > seckill.MaxItems {
		return nil, seckill.Errorf(seckill.EINVALID, "items must list 1 to %d items", seckill.MaxItems)
	}
	out := make([]seckill.Item, len(b.Items))
	for i, it := range b.Items {
		if it.SKUID == nil || it.Title == nil || it.PriceCents == nil || it.Stock == nil {
			return nil, seckill.Errorf(seckill.EINVALID, "items[%d] needs sku_id, title, price_cents and stock", i)
		}
		out[i] = seckill.Item{SKUID: *it.SKUID, Title: *it.Title, PriceCents: *it.PriceCents, TotalStock: *it.Stock}
	}
	return out, nil
}

// draw reports whether the body asks for a draw sale, whose
// per_user_limit may be left out (1).
func (b *createSessionBody) draw() bool {
	return b.Mode != nil && seckill.SessionMode(*b.Mode) == seckill.ModeDraw
}

func (b *createSessionBody) session(now time.Time) (*seckill.Session, error) {
	for _, f := range []struct {
		name    string
		present bool
	}{
		{"title", b.Title != nil}, {"per_user_limit", b.PerUserLimit != nil || b.draw()},
		{"start_at", b.StartAt != nil}, {"end_at", b.EndAt != nil},
	} {
		if !f.present {
			return nil, seckill.Errorf(seckill.EINVALID, "field %q is required", f.name)
		}
	}
	items, err := b.items()
	if err != nil {
		return nil, err
	}
	start, err := time.Parse(time.RFC3339, *b.StartAt)
	if err != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"start_at\" must be an RFC 3339 time")
	}
	end, err := time.Parse(time.RFC3339, *b.EndAt)
	if err != nil {
		return nil, seckill.Errorf(seckill.EINVALID, "field \"end_at\" must be an RFC 3339 time")
	}
	limit := 1 // a draw's right buys one unit
	if b.PerUserLimit != nil {
		limit = *b.PerUserLimit
	}
	s := &seckill.Session{Title: *b.Title, PerUserLimit: limit,
		StartAt: start.UTC().Truncate(time.Millisecond), EndAt: end.UTC().Truncate(time.Millisecond)}
	s.SetItems(items)
	if b.Currency != nil {
		s.Currency = *b.Currency
	}
	if b.RequireTicket != nil {
		s.RequireTicket = *b.RequireTicket
	}
	if b.RequireCaptcha != nil && *b.RequireCaptcha {
		s.RequireCaptcha, s.RequireTicket = true, true
	}
	if err := b.registration(s, now); err != nil {
		return nil, err
	}
	return s, s.Validate()
}

// registration sets a reserved or draw sale's mode and window, with the defaults
// the design brief gives: from its creation until its start.
func (b *createSessionBody) registration(s *seckill.Session, now time.Time) error {
	if b.Mode != nil {
		s.Mode = seckill.SessionMode(*b.Mode)
	}
	for _, f := range []struct {
		name string
		raw  *string
		to   *time.Time
	}{{"register_from", b.RegisterFrom, &s.RegisterFrom}, {"register_until", b.RegisterUntil, &s.RegisterUntil}} {
		if f.raw == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339, *f.raw)
		if err != nil {
			return seckill.Errorf(seckill.EINVALID, "field %q must be an RFC 3339 time", f.name)
		}
		*f.to = t.UTC().Truncate(time.Millisecond)
	}
	if b.RightTTLSeconds != nil {
		s.RightTTLSeconds = *b.RightTTLSeconds
	} else if s.Mode == seckill.ModeDraw {
		s.RightTTLSeconds = int(seckill.DefaultRightTTL.Seconds())
	}
	if s.Registers() {
		if s.RegisterFrom.IsZero() {
			s.RegisterFrom = now.UTC().Truncate(time.Millisecond)
		}
		if s.RegisterUntil.IsZero() {
			s.RegisterUntil = s.StartAt
		}
	}
	return nil
}

// createSession: POST /admin/v1/sessions.
func (s *Server) createSession(c *fiber.Ctx) error {
	var body createSessionBody
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	sess, err := body.session(s.cfg.Now())
	if err != nil {
		return err
	}
	controls, err := s.controls()
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
		// The body as decoded, not as sent: the same fields in another
		// order or spacing are the same request.
		canonical, _ := json.Marshal(body)
		sum := sha256.Sum256(canonical)
		by.RequestID, by.Fingerprint = key, hex.EncodeToString(sum[:])
	}
	if err := controls.Create(c.UserContext(), sess, by); err != nil {
		return err
	}
	s.svc.Sessions.Forget(sess.ID)
	v, err := s.sessionView(c.UserContext(), sess)
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
	controls, err := s.controls()
	if err != nil {
		return err
	}
	p, err := controls.Preheat(c.UserContext(), id, force, traceID(c))
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

// controls are the session controls, UNAVAILABLE when the process has none.
func (s *Server) controls() (SessionControls, error) {
	if s.svc.Controls == nil {
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "session controls are not configured in this process")
	}
	return s.svc.Controls, nil
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

// block: PUT /admin/v1/blocklist/{user_id}.
func (s *Server) block(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	name, role := actor(c)
	if err := s.svc.Blocklist.Block(c.UserContext(), id, fmt.Sprintf("by %s (%s)", name, role)); err != nil {
		return err
	}
	s.log.Info("user blocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, true)
}

// unblock: DELETE /admin/v1/blocklist/{user_id}.
func (s *Server) unblock(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	if err := s.svc.Blocklist.Unblock(c.UserContext(), id); err != nil {
		return err
	}
	name, role := actor(c)
	s.log.Info("user unblocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, false)
}

func (s *Server) blocklistChanged(c *fiber.Ctx, id int64, blocked bool) error {
	if err := s.svc.Admission.RefreshBlocklist(c.UserContext()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user_id": id, "blocked": blocked})
}
