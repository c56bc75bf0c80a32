package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/captcha"
)

// newCaptcha: POST /api/v1/sessions/{id}/captcha, the shopper's human check
// for a session that requires one: {captcha_id, image (a PNG data URL),
// audio (its URL), expires_at}. The answer goes with the ticket request.
func (s *Server) newCaptcha(c *fiber.Ctx) error {
	sess, user, err := s.shopperSession(c)
	if err != nil {
		return err
	}
	id := sess.ID
	if !sess.RequireCaptcha {
		return seckill.Errorf(seckill.EINVALID, "session %d does not require a captcha", id)
	}
	if sess.StateAt(s.cfg.Now(), 1) == seckill.SessionEnded {
		return seckill.Errorf(seckill.EENDED, "session %d ended at %s", id, sess.EndAt.Format(time.RFC3339))
	}
	// Drawing one costs CPU: the shopper's rate limits apply.
	if err := s.distributedLimits(c, user); err != nil {
		return err
	}
	cid, img, err := captcha.Draw(c.UserContext(), s.cfg.Captchas, user, id)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"captcha_id": cid,
		"image":      img,
		"audio":      "/api/v1/captchas/" + cid + "/audio",
		"expires_at": s.cfg.Now().Add(captcha.TTL).UTC().Truncate(time.Second),
	})
}

// captchaAudio: GET /api/v1/captchas/{captcha_id}/audio, the same captcha
// spoken (WAV), for its shopper only; it does not use the captcha up.
func (s *Server) captchaAudio(c *fiber.Ctx) error {
	wav, err := captcha.Audio(c.UserContext(), s.cfg.Captchas, c.Params("captcha_id"), userID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.Send(wav)
}

// ticketBody is the body of POST /api/v1/sessions/{id}/ticket for a
// session that requires a captcha.
type ticketBody struct {
	CaptchaID     *string `json:"captcha_id"`
	CaptchaAnswer *string `json:"captcha_answer"`
}

// checkCaptcha decodes the captcha a ticket request names and its answer,
// and checks them (using the captcha up).
func (s *Server) checkCaptcha(c *fiber.Ctx, sessionID, user int64) error {
	var b ticketBody
	if err := decodeStrict(c.Body(), &b, false); err != nil {
		return err
	}
	if b.CaptchaID == nil || b.CaptchaAnswer == nil {
		return seckill.Errorf(seckill.EINVALID, "this session requires a captcha: send captcha_id and captcha_answer (POST /api/v1/sessions/%d/captcha)", sessionID)
	}
	return captcha.Check(c.UserContext(), s.cfg.Captchas, *b.CaptchaID, *b.CaptchaAnswer, user, sessionID)
}
