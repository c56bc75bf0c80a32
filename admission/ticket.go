package admission

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
	"sync/atomic"
	"time"

	"github.com/seckill/seckill"
)

// Tickets remembers which purchase tickets were used: a ticket buys once.
type Tickets interface {
	ConsumeTicket(ctx context.Context, sessionID int64, nonce, owner string, ttl time.Duration) (bool, error)
}

// TicketHeader carries a purchase ticket on an order request.
const TicketHeader = "X-Seckill-Ticket"

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
	bad := seckill.Errorf(seckill.EFORBIDDEN, "a valid purchase ticket (%s) is required for this session", TicketHeader)
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

// Attempts without a key consume tickets under a random per-process prefix
// and a counter: unique across processes with overwhelming probability.
var (
	attemptPrefix = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read panics instead)
		return hex.EncodeToString(b[:]) + "-"
	}()
	attempts atomic.Uint64
)

// useTicket verifies and consumes the ticket of an attempt. The ticket is
// consumed by the purchase attempt: its Idempotency-Key (the retry of the
// same attempt presents it again and is let through; the script replays
// that attempt's answer), else a value this attempt alone holds, so that
// only the gate's own retry of the consuming command matches. Never the
// trace id: the client chooses it, and two requests carrying the same
// X-Request-ID are two purchases.
func (s *Service) useTicket(ctx context.Context, r *Request, a *seckill.Attempt) error {
	nonce, left, err := verifyTicket(s.ticketKeys, r.Ticket, a.Session.ID, a.UserID, s.Now())
	if err != nil {
		return err
	}
	owner := "r:" + attemptPrefix + strconv.FormatUint(attempts.Add(1), 36)
	if a.IdempotencyKey != "" {
		owner = "k:" + a.IdempotencyKey
	}
	fresh, err := s.Tickets.ConsumeTicket(ctx, a.Session.ID, nonce, owner, left+time.Second)
	if err != nil {
		return err
	}
	if !fresh {
		return seckill.Errorf(seckill.EFORBIDDEN, "purchase ticket already used; fetch a new one")
	}
	return nil
}
