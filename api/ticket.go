package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
)

// ticketTTL is how long a purchase ticket is valid: long enough to click,
// too short to stockpile.
const ticketTTL = 60 * time.Second

// issueTicket: POST /api/v1/sessions/{id}/ticket (shopper, inside the sale window).
func (s *Server) issueTicket(c *fiber.Ctx) error {
	sess, user, err := s.shopperSession(c)
	if err != nil {
		return err
	}
	id := sess.ID
	// A reserved sale checks its shoppers when they register: its tickets
	// are for the registration window, a first-come sale's for its own.
	open := admission.Open
	if sess.Registers() {
		open = (*seckill.Session).CanRegister
	}
	if err := open(sess, s.cfg.Now()); err != nil {
		return err
	}
	if err := s.distributedLimits(c, user); err != nil {
		return err
	}
	if sess.RequireCaptcha {
		if err := s.checkCaptcha(c, id, user); err != nil {
			return err
		}
	}
	exp := s.cfg.Now().Add(ticketTTL)
	return c.JSON(fiber.Map{"ticket": s.svc.Admission.Ticket(id, user, exp), "expires_at": exp.UTC().Truncate(time.Second)})
}

// shopperSession is the session of the path and the signed-in shopper
// asking about it, refused at once when the shopper is blocked.
func (s *Server) shopperSession(c *fiber.Ctx) (*seckill.Session, int64, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, 0, err
	}
	user := userID(c)
	if err := s.svc.Admission.Blocked(user); err != nil {
		return nil, 0, err
	}
	sess, err := s.svc.Sessions.Get(c.UserContext(), id)
	return sess, user, err
}
