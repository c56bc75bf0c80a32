package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dchest/captcha"
	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// CaptchaStore keeps the answers of the captchas handed out, shared by
// every API process (redis.Captchas): Take uses one up whatever the answer.
type CaptchaStore interface {
	Put(ctx context.Context, id, record string, ttl time.Duration) error
	Peek(ctx context.Context, id string) (string, bool, error)
	Take(ctx context.Context, id string) (string, bool, error)
}

// The captchas of a session that requires a human check (dchest/captcha:
// distorted digits in a PNG, or spoken over noise in a WAV).
const (
	captchaTTL    = 2 * time.Minute
	captchaDigits = 6
	captchaWidth  = 240
	captchaHeight = 80
)

var (
	errCaptchaGone  = seckill.Errorf(seckill.EFORBIDDEN, "the captcha expired or was already used; fetch a new one")
	errCaptchaWrong = seckill.Errorf(seckill.EFORBIDDEN, "the captcha answer is wrong; fetch a new one")
)

// captchaRecord binds a captcha to the shopper and the session it was
// handed out for, with its answer: "<user>|<session>|<digits>".
func captchaRecord(user, sessionID int64, digits []byte) string {
	b := make([]byte, len(digits))
	for i, d := range digits {
		b[i] = '0' + d
	}
	return fmt.Sprintf("%d|%d|%s", user, sessionID, b)
}

func parseCaptchaRecord(rec string) (user, sessionID int64, answer string, ok bool) {
	parts := strings.Split(rec, "|")
	if len(parts) != 3 {
		return 0, 0, "", false
	}
	u, err1 := strconv.ParseInt(parts[0], 10, 64)
	s, err2 := strconv.ParseInt(parts[1], 10, 64)
	return u, s, parts[2], err1 == nil && err2 == nil
}

// newCaptcha: POST /api/v1/sessions/{id}/captcha, the shopper's human check
// for a session that requires one: {captcha_id, image (a PNG data URL),
// audio (its URL), expires_at}. The answer goes with the ticket request.
func (s *Server) newCaptcha(c *fiber.Ctx) error {
	sess, user, err := s.shopperSession(c)
	if err != nil {
		return err
	}
	id, ctx := sess.ID, c.UserContext()
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
	if s.cfg.Captchas == nil {
		return seckill.Errorf(seckill.EUNAVAILABLE, "captchas are not configured on this API")
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	cid := hex.EncodeToString(raw)
	digits := captcha.RandomDigits(captchaDigits)
	if err := s.cfg.Captchas.Put(ctx, cid, captchaRecord(user, id, digits), captchaTTL); err != nil {
		return err
	}
	img, err := captchaImage(cid, digits)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"captcha_id": cid,
		"image":      img,
		"audio":      "/api/v1/captchas/" + cid + "/audio",
		"expires_at": s.cfg.Now().Add(captchaTTL).UTC().Truncate(time.Second),
	})
}

// captchaImage draws the digits as a PNG data URL: the CPU a captcha
// costs (BenchmarkCaptchaImage).
func captchaImage(id string, digits []byte) (string, error) {
	var png bytes.Buffer
	if _, err := captcha.NewImage(id, digits, captchaWidth, captchaHeight).WriteTo(&png); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png.Bytes()), nil
}

// captchaAudio: GET /api/v1/captchas/{captcha_id}/audio, the same captcha
// spoken (WAV), for its shopper only; it does not use the captcha up.
func (s *Server) captchaAudio(c *fiber.Ctx) error {
	rec, ok, err := s.captchaFor(c.UserContext(), c.Params("captcha_id"), false)
	if err != nil {
		return err
	}
	user, _, answer, valid := parseCaptchaRecord(rec)
	if !ok || !valid || user != userID(c) {
		return seckill.Errorf(seckill.ENOTFOUND, "no such captcha (expired, used, or not yours)")
	}
	digits := make([]byte, len(answer))
	for i := range answer {
		digits[i] = answer[i] - '0'
	}
	var wav bytes.Buffer
	if _, err := captcha.NewAudio(c.Params("captcha_id"), digits, "en").WriteTo(&wav); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, "audio/wav")
	return c.Send(wav.Bytes())
}

func (s *Server) captchaFor(ctx context.Context, id string, take bool) (string, bool, error) {
	if s.cfg.Captchas == nil {
		return "", false, seckill.Errorf(seckill.EUNAVAILABLE, "captchas are not configured on this API")
	}
	if len(id) != 32 {
		return "", false, nil
	}
	if take {
		return s.cfg.Captchas.Take(ctx, id)
	}
	return s.cfg.Captchas.Peek(ctx, id)
}

// ticketBody is the body of POST /api/v1/sessions/{id}/ticket for a
// session that requires a captcha.
type ticketBody struct {
	CaptchaID     *string `json:"captcha_id"`
	CaptchaAnswer *string `json:"captcha_answer"`
}

// checkCaptcha uses up the captcha the ticket request names and says
// whether it was this shopper's, for this session, answered right.
func (s *Server) checkCaptcha(c *fiber.Ctx, sessionID, user int64) error {
	var b ticketBody
	if err := decodeStrict(c.Body(), &b, false); err != nil {
		return err
	}
	if b.CaptchaID == nil || b.CaptchaAnswer == nil {
		return seckill.Errorf(seckill.EINVALID, "this session requires a captcha: send captcha_id and captcha_answer (POST /api/v1/sessions/%d/captcha)", sessionID)
	}
	rec, ok, err := s.captchaFor(c.UserContext(), *b.CaptchaID, true)
	if err != nil {
		return err
	}
	owner, sess, answer, valid := parseCaptchaRecord(rec)
	if !ok || !valid || owner != user || sess != sessionID {
		return errCaptchaGone
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(*b.CaptchaAnswer)), []byte(answer)) != 1 {
		return errCaptchaWrong
	}
	return nil
}
