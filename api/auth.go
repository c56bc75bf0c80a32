package api

import (
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill"
)

// clockSkew is the leeway allowed on exp/nbf/iat between our clock and the
// token issuer's.
const clockSkew = 5 * time.Second

const localUser = "seckill.user"

// IssueToken returns a shopper JWT (HS256) for userID valid for ttl.
func IssueToken(secret []byte, userID int64, ttl time.Duration, now time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(userID, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// ParseToken verifies a shopper JWT and returns its user id. Only HS256 is
// accepted (no "none", no algorithm confusion), exp is required.
func ParseToken(secret []byte, token string, now time.Time) (int64, error) {
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(clockSkew),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return 0, seckill.Errorf(seckill.EUNAUTHORIZED, "token expired")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return 0, seckill.Errorf(seckill.EUNAUTHORIZED, "token has no exp claim")
	case err != nil:
		return 0, seckill.Errorf(seckill.EUNAUTHORIZED, "invalid token")
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return 0, seckill.Errorf(seckill.EUNAUTHORIZED, "token sub must be a positive decimal user id")
	}
	return id, nil
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(c *fiber.Ctx) (string, bool) {
	h := c.Get(fiber.HeaderAuthorization)
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// shopper authenticates a shopper and stores the user id for the handler.
func (s *Server) shopper(c *fiber.Ctx) error {
	tok, ok := bearer(c)
	if !ok {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "missing bearer token")
	}
	id, err := ParseToken(s.cfg.JWTSecret, tok, s.cfg.Now())
	if err != nil {
		return err
	}
	c.Locals(localUser, id)
	return c.Next()
}

func userID(c *fiber.Ctx) int64 {
	id, _ := c.Locals(localUser).(int64)
	return id
}

// admin checks the admin bearer token in constant time.
func (s *Server) admin(c *fiber.Ctx) error {
	tok, ok := bearer(c)
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) != 1 {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "admin token required")
	}
	return c.Next()
}
