package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
)

// devTokenTTL is the lifetime of a dev sign-in: a working day.
const devTokenTTL = 24 * time.Hour

type devTokenBody struct {
	UserID *int64 `json:"user_id"`
}

// devToken: POST /dev/v1/token {"user_id": N} (dev only) returns a shopper
// token for any user, so that the shop page can switch users without the
// CLI. Mounted only with Config.Dev: it hands out every identity.
func (s *Server) devToken(c *fiber.Ctx) error {
	var body devTokenBody
	if err := decodeStrict(c.Body(), &body, false); err != nil {
		return err
	}
	if body.UserID == nil || *body.UserID <= 0 {
		return seckill.Errorf(seckill.EINVALID, "field \"user_id\" must be a positive integer")
	}
	now := s.cfg.Now()
	tok, err := auth.IssueToken(s.cfg.JWTSecret, *body.UserID, devTokenTTL, now)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"token": tok, "user_id": *body.UserID, "expires_at": now.Add(devTokenTTL).UTC()})
}
