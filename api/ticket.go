package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
)

// The steps before a purchase, each decided by admission: the handlers
// here decode the request and encode its answer.

// ticketBody is the body of POST /api/v1/sessions/{id}/ticket: the
// captcha's answer, for a session that requires one.
type ticketBody struct {
	CaptchaID     *string `json:"captcha_id"`
	CaptchaAnswer *string `json:"captcha_answer"`
}

// issueTicket: POST /api/v1/sessions/{id}/ticket, a purchase ticket
// (admission.Service.IssueTicket). The body is read only for a session
// that requires a captcha.
func (s *Server) issueTicket(c *fiber.Ctx) error {
	r, err := s.shopperRequest(c)
	if err != nil {
		return err
	}
	tk, ans := s.svc.Admission.IssueTicket(c.UserContext(), r, func() (string, string, error) {
		var b ticketBody
		if err := decodeStrict(c.Body(), &b, false); err != nil {
			return "", "", err
		}
		if b.CaptchaID == nil || b.CaptchaAnswer == nil {
			return "", "", seckill.Errorf(seckill.EINVALID, "this session requires a captcha: send captcha_id and captcha_answer (POST /api/v1/sessions/%d/captcha)", r.SessionID)
		}
		return *b.CaptchaID, *b.CaptchaAnswer, nil
	})
	if err := s.refused(c, ans); err != nil {
		return err
	}
	return c.JSON(tk)
}

// newCaptcha: POST /api/v1/sessions/{id}/captcha, a captcha for a session
// that requires one (admission.Service.NewCaptcha).
func (s *Server) newCaptcha(c *fiber.Ctx) error {
	r, err := s.shopperRequest(c)
	if err != nil {
		return err
	}
	cc, ans := s.svc.Admission.NewCaptcha(c.UserContext(), r)
	if err := s.refused(c, ans); err != nil {
		return err
	}
	return c.JSON(cc)
}

// captchaAudio: GET /api/v1/captchas/{captcha_id}/audio, the captcha read
// aloud, for its own shopper only.
func (s *Server) captchaAudio(c *fiber.Ctx) error {
	wav, err := s.svc.Admission.CaptchaAudio(c.UserContext(), c.Params("captcha_id"), userID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.Send(wav)
}

// shopperRequest is what admission is asked of on a shopper's route of a
// session: the session, the shopper and what the front door knows of them.
func (s *Server) shopperRequest(c *fiber.Ctx) (*admission.Request, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.caller(c, &admission.Request{SessionID: id, UserID: userID(c), TraceID: traceID(c)}), nil
}
