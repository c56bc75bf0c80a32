package api

import (
	"context"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// Registrations take a reserved sale's registrations
// (registrations.Desk).
type Registrations interface {
	Register(ctx context.Context, sess *seckill.Session, userID, skuID int64) (created bool, err error)
	Status(ctx context.Context, sess *seckill.Session, userID int64) (*seckill.Registration, error)
	List(ctx context.Context, sess *seckill.Session) ([]byte, error)
}

// register: POST /api/v1/sessions/{id}/registrations. The checks a
// first-come sale makes at its start run here instead, hours before it,
// where a second is cheap (admission.Service.MayRegister, the rate limits
// included).
func (s *Server) register(c *fiber.Ctx) error {
	r, err := s.shopperRequest(c)
	if err != nil {
		return err
	}
	// The item registered for: required in a sale of several items.
	var body struct {
		SKUID int64 `json:"sku_id"`
	}
	if err := decodeStrict(c.Body(), &body, true); err != nil {
		return err
	}
	sess, ans := s.svc.Admission.MayRegister(c.UserContext(), r)
	if err := s.refused(c, ans); err != nil {
		return err
	}
	created, err := s.svc.Registrations.Register(c.UserContext(), sess, r.UserID, body.SKUID)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	out := fiber.Map{"status": seckill.RegistrationRegistered}
	if sess.Several() {
		out["sku_id"] = body.SKUID
	}
	return c.Status(status).JSON(out)
}

// registration: GET /api/v1/sessions/{id}/registration, the shopper's own:
// REGISTERED, or once a draw is made WON, USED, WAITLISTED or LOST
// (seckill.DrawStatus).
func (s *Server) registration(c *fiber.Ctx) error {
	sess, err := s.pathSession(c)
	if err != nil {
		return err
	}
	r, err := s.svc.Registrations.Status(c.UserContext(), sess, userID(c))
	if err != nil {
		return err
	}
	body := fiber.Map{"status": r.Status, "registered_at": r.At}
	if r.SKUID != 0 {
		body["sku_id"] = r.SKUID
	}
	// Once a draw's list is published: whether the registration is in it
	// (stamped by the database before register_until), the list whose
	// count and digest the session shows.
	if sess.RegistrantsDigest != "" {
		body["in_list"] = r.At.Before(sess.RegisterUntil)
	}
	// A draw's: a winner's right's end, a waitlisted shopper's place.
	if !r.RightUntil.IsZero() {
		body["right_until"] = r.RightUntil
	}
	if r.Position > 0 {
		body["position"] = r.Position
	}
	return c.JSON(body)
}

// registrantList: GET /api/v1/sessions/{id}/registrants, public: a draw's
// registrant list as published when registration closed, one user id a
// line in ascending order, the text whose SHA-256 is the session's
// registrants_digest. A shopper finds their own line in it, and checks
// the count, the digest and, once the seed is revealed, the ranking.
func (s *Server) registrantList(c *fiber.Ctx) error {
	sess, err := s.pathSession(c)
	if err != nil {
		return err
	}
	list, err := s.svc.Registrations.List(c.UserContext(), sess)
	if err != nil {
		return err
	}
	// It never changes once published: caches may keep it, by its digest.
	c.Set(fiber.HeaderETag, `"`+sess.RegistrantsDigest+`"`)
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400, immutable")
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	return c.Send(list)
}
