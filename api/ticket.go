package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/checkout"
)

// Tickets remembers which purchase tickets were used: a ticket buys once.
type Tickets interface {
	ConsumeTicket(ctx context.Context, sessionID int64, nonce, owner string, ttl time.Duration) (bool, error)
}

// HeaderTicket carries a purchase ticket on an order request.
const HeaderTicket = "X-Seckill-Ticket"

// ticketTTL is how long a purchase ticket is valid: long enough to click,
// too short to stockpile.
const ticketTTL = 60 * time.Second

// ticketPurpose derives the tickets' MAC keys from the JWT secrets
// (derivedKeys).
const ticketPurpose = "seckill purchase ticket v1"

// makeTicket returns "<session>.<user>.<exp unix>.<nonce>.<mac>" in base64url.
func makeTicket(key []byte, sessionID, userID int64, exp time.Time) string {
	n := make([]byte, 12)
	_, _ = rand.Read(n)
	payload := fmt.Sprintf("%d.%d.%d.%s", sessionID, userID, exp.Unix(), hex.EncodeToString(n))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyTicket checks a ticket's MAC (made with any of keys: an API of
// the other side of a rotation made it), binding and expiry and returns
// its nonce and remaining lifetime. It does not consume it.
func verifyTicket(keys [][]byte, raw string, sessionID, userID int64, now time.Time) (string, time.Duration, error) {
	bad := seckill.Errorf(seckill.EFORBIDDEN, "a valid purchase ticket (%s) is required for this session", HeaderTicket)
	p64, m64, ok := strings.Cut(raw, ".")
	if !ok || len(raw) > 256 {
		return "", 0, bad
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return "", 0, bad
	}
	if !macOfAny(keys, payload, sig) {
		return "", 0, bad
	}
	f := strings.Split(string(payload), ".")
	if len(f) != 4 || f[0] != strconv.FormatInt(sessionID, 10) || f[1] != strconv.FormatInt(userID, 10) {
		return "", 0, bad
	}
	exp, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return "", 0, bad
	}
	left := time.Unix(exp, 0).Sub(now)
	if left <= 0 {
		return "", 0, seckill.Errorf(seckill.EFORBIDDEN, "purchase ticket expired; fetch a new one")
	}
	return f[3], left, nil
}

// issueTicket: POST /api/v1/sessions/{id}/ticket (shopper, inside the sale window).
func (s *Server) issueTicket(c *fiber.Ctx) error {
	sess, user, err := s.shopperSession(c)
	if err != nil {
		return err
	}
	id := sess.ID
	// A reserved sale checks its shoppers when they register: its tickets
	// are for the registration window, a first-come sale's for its own.
	open := checkout.Open
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
	return c.JSON(fiber.Map{"ticket": makeTicket(s.ticketKeys[0], id, user, exp), "expires_at": exp.UTC().Truncate(time.Second)})
}

// shopperSession is the session of the path and the signed-in shopper
// asking about it, refused at once when the shopper is blocked.
func (s *Server) shopperSession(c *fiber.Ctx) (*seckill.Session, int64, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, 0, err
	}
	user := userID(c)
	if s.blocked.has(user) {
		return nil, 0, errBlocked
	}
	sess, err := s.sessions.Get(c.UserContext(), id)
	return sess, user, err
}

// useTicket verifies and consumes the ticket of an order request. The
// ticket is consumed by the purchase attempt: its Idempotency-Key (the
// retry of the same attempt presents it again and is let through; the
// script replays that attempt's answer), else a value this request alone
// holds, so that only the gate's own retry of the consuming command matches.
// Never the trace id: the client chooses it, and two requests carrying the
// same X-Request-ID are two purchases.
func (s *Server) useTicket(c *fiber.Ctx, a *seckill.Attempt) error {
	nonce, left, err := verifyTicket(s.ticketKeys, c.Get(HeaderTicket), a.Session.ID, a.UserID, s.cfg.Now())
	if err != nil {
		return err
	}
	owner := "r:" + newTraceID()
	if a.IdempotencyKey != "" {
		owner = "k:" + a.IdempotencyKey
	}
	fresh, err := s.gate.ConsumeTicket(c.UserContext(), a.Session.ID, nonce, owner, left+time.Second)
	if err != nil {
		return err
	}
	if !fresh {
		return seckill.Errorf(seckill.EFORBIDDEN, "purchase ticket already used; fetch a new one")
	}
	return nil
}
