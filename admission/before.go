package admission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/captcha"
)

// What a shopper does before a purchase, decided here like the purchase
// itself: the device cookie the shop page asks for first, a captcha, the
// purchase ticket it buys, and a reserved sale's registration. The
// handlers decode the request and encode these answers.

// TicketTTL is how long a purchase ticket is good for: long enough to
// buy, short enough that a ticket is not a stock to hoard.
const TicketTTL = 60 * time.Second

// Ticket is a purchase ticket as the shopper is given it.
type Ticket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

// IssueTicket gives the shopper of r a purchase ticket for r's session:
// only while the sale is open to them (its window, or a reserved sale's
// registration), within the fleet's limits, and, when the session
// requires a captcha, once solve (the shopper's answer, read only then)
// is right.
func (s *Service) IssueTicket(ctx context.Context, r *Request, solve func() (id, answer string, err error)) (*Ticket, Answer) {
	sess, ans := s.shopperSession(ctx, r)
	if ans.Err != nil {
		return nil, ans
	}
	open := Open
	if sess.Registers() {
		open = (*seckill.Session).CanRegister
	}
	if err := open(sess, s.Now()); err != nil {
		return nil, Answer{Err: err}
	}
	if ans := s.Limits.Allow(ctx, r.UserID, r.LimitIP, ""); ans.Err != nil {
		return nil, ans
	}
	if sess.RequireCaptcha {
		id, answer, err := solve()
		if err == nil {
			err = captcha.Check(ctx, s.Captchas, id, answer, r.UserID, sess.ID)
		}
		if err != nil {
			return nil, Answer{Err: err}
		}
	}
	exp := s.Now().Add(TicketTTL)
	return &Ticket{Ticket: makeTicket(s.ticketKeys[0], sess.ID, r.UserID, exp), ExpiresAt: exp.UTC().Truncate(time.Second)}, Answer{}
}

// Captcha is a captcha as the shopper is given it: its image, and where
// to hear it.
type Captcha struct {
	ID        string    `json:"captcha_id"`
	Image     string    `json:"image"`
	Audio     string    `json:"audio"`
	ExpiresAt time.Time `json:"expires_at"`
}

// NewCaptcha draws a captcha for the shopper of r in r's session, which
// must require one and not have ended, within the fleet's limits.
func (s *Service) NewCaptcha(ctx context.Context, r *Request) (*Captcha, Answer) {
	sess, ans := s.shopperSession(ctx, r)
	if ans.Err != nil {
		return nil, ans
	}
	if !sess.RequireCaptcha {
		return nil, Answer{Err: seckill.Errorf(seckill.EINVALID, "session %d does not require a captcha", sess.ID)}
	}
	if sess.StateAt(s.Now(), 1) == seckill.SessionEnded {
		return nil, Answer{Err: seckill.Errorf(seckill.EENDED, "session %d ended at %s", sess.ID, sess.EndAt.Format(time.RFC3339))}
	}
	if ans := s.Limits.Allow(ctx, r.UserID, r.LimitIP, ""); ans.Err != nil {
		return nil, ans
	}
	id, img, err := captcha.Draw(ctx, s.Captchas, r.UserID, sess.ID)
	if err != nil {
		return nil, Answer{Err: err}
	}
	return &Captcha{ID: id, Image: img, Audio: "/api/v1/captchas/" + id + "/audio",
		ExpiresAt: s.Now().Add(captcha.TTL).UTC().Truncate(time.Second)}, Answer{}
}

// CaptchaAudio is the spoken form of a captcha drawn for userID.
func (s *Service) CaptchaAudio(ctx context.Context, id string, userID int64) ([]byte, error) {
	return captcha.Audio(ctx, s.Captchas, id, userID)
}

// MayRegister screens the shopper of r for a registration to r's
// session: not blocked, while it registers, within the rate limits (the
// device's too), past the risk check and the ticket (a reserved sale
// screens here, not at its start), the window first so that a
// registration out of it spends no ticket and no risk-service call. The
// session is the one to register to.
func (s *Service) MayRegister(ctx context.Context, r *Request) (*seckill.Session, Answer) {
	sess, ans := s.shopperSession(ctx, r)
	if ans.Err != nil {
		return nil, ans
	}
	if err := sess.CanRegister(s.Now()); err != nil {
		return nil, Answer{Err: err}
	}
	if ans := s.limit(ctx, r, true); ans.Err != nil {
		return nil, ans
	}
	a := &seckill.Attempt{Session: sess, UserID: r.UserID, TraceID: r.TraceID, Now: s.Now()}
	if ans := s.Screen(ctx, r, a); ans.Err != nil {
		return nil, ans
	}
	return sess, Answer{}
}

// Device is the device id of the shop page's cookie, a new one when it
// sent none or one this shop did not sign, and the signed cookie value
// to send back.
func (s *Service) Device(cookie string) (id, signed string, err error) {
	id, err = s.DeviceID(cookie)
	if err != nil || id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", err
		}
		id = hex.EncodeToString(b[:])
	}
	return id, s.SignDevice(id), nil
}
