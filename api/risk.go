package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// RiskConfig is what a purchase attempt passes before admission, after
// the rate limits: the built-in rules (User-Agent, the device limit) and,
// when one is configured, the shop's own risk service. Seconds here are
// cheap next to a bot's unit: a refused attempt never touches stock.
type RiskConfig struct {
	// Checker is the shop's risk service (SECKILL_RISK_URL); nil: the
	// built-in rules only.
	Checker seckill.RiskChecker
	// Timeout is the service's deadline (DefaultRiskTimeout): it is on
	// the purchase path.
	Timeout time.Duration
	// FailClosed refuses an attempt the service did not answer in time
	// (503, retry); by default such an attempt goes on (fail open).
	FailClosed bool
	// CacheTTL is how long a verdict holds for a shopper in a session
	// (DefaultRiskCache): a shopper's retries and second clicks cost the
	// service nothing.
	CacheTTL time.Duration
	// NoAnswerHold is how long a shopper whose check went unanswered is
	// not asked again (DefaultRiskNoAnswerHold): meanwhile their attempts
	// are decided as no answer at once, so a slow service costs each
	// shopper its deadline once, not at every click, and is not hammered
	// while it struggles.
	NoAnswerHold time.Duration
	// UserAgentDeny refuses attempts whose User-Agent contains one of
	// these (case-insensitive); "-" matches a request without one.
	UserAgentDeny []string
}

// Defaults of RiskConfig.
const (
	DefaultRiskTimeout = 10 * time.Millisecond
	DefaultRiskCache   = 30 * time.Second
	// DefaultRiskNoAnswerHold matches the Retry-After of a closed
	// check's 503: the shopper's retry after it is asked afresh.
	DefaultRiskNoAnswerHold = time.Second
	// riskCacheSize bounds the verdicts kept (one per shopper and session,
	// tens of bytes each): past it the idlest are asked again.
	riskCacheSize = 1 << 18
)

// LayerRisk names the risk check in X-Seckill-Layer.
const LayerRisk = "risk"

// DeviceCookie is the shop page's device cookie: "<id>.<signature>",
// set by GET /api/v1/device, signed with a key derived from the JWT
// secret so that no client can make one up.
const DeviceCookie = "seckill_device"

// deviceCookieAge is how long a browser keeps its device id.
const deviceCookieAge = 365 * 24 * time.Hour

type riskKey struct{ session, user int64 }

// riskCheck applies the risk rules to an attempt; nil lets it go on.
func (s *Server) riskCheck(c *fiber.Ctx, a *seckill.Attempt) error {
	r := &s.cfg.Risk
	ua := string(c.Request().Header.UserAgent())
	for _, deny := range r.UserAgentDeny {
		if (deny == "-" && ua == "") || (deny != "-" && deny != "" && strings.Contains(strings.ToLower(ua), strings.ToLower(deny))) {
			c.Set(HeaderLayer, LayerRisk)
			s.cfg.Metrics.RiskChecks.WithLabelValues("user_agent").Inc()
			return seckill.Errorf(seckill.EFORBIDDEN, "this client may not buy (User-Agent rule)")
		}
	}
	device, err := s.deviceID(c)
	if err != nil {
		return err
	}
	if device != "" && s.cfg.Limits.Device > 0 {
		ok, retry, err := s.cfg.Limiter.Allow(c.UserContext(), "device:"+device, s.cfg.Limits.Device)
		if err != nil {
			return err
		}
		if !ok {
			c.Set(HeaderLayer, LayerRateLimit)
			return rateLimited(c, retry)
		}
	}
	if r.Checker == nil {
		return nil
	}
	k := riskKey{a.Session.ID, a.UserID}
	now := time.Now()
	v, cached := s.riskVerdicts.get(k, now)
	if cached {
		s.cfg.Metrics.RiskChecks.WithLabelValues("cached").Inc()
	} else {
		if _, missed := s.riskMissed.get(k, now); missed {
			return s.riskNoAnswer(c) // it missed this shopper a moment ago
		}
		ctx, cancel := context.WithTimeout(c.UserContext(), r.Timeout)
		v, err = r.Checker.Check(ctx, seckill.RiskQuery{SessionID: a.Session.ID, UserID: a.UserID,
			IP: s.clientIP(c).String(), UserAgent: strings.Clone(ua), DeviceID: device})
		cancel()
		if err != nil {
			s.riskMissed.put(k, struct{}{}, now.Add(r.NoAnswerHold))
			return s.riskNoAnswer(c)
		}
		s.riskVerdicts.getOrPut(k, now, r.CacheTTL, func() seckill.RiskVerdict { return v })
	}
	if v.Allow {
		if !cached {
			s.cfg.Metrics.RiskChecks.WithLabelValues("allow").Inc()
		}
		return nil
	}
	if !cached {
		s.cfg.Metrics.RiskChecks.WithLabelValues("deny").Inc()
	}
	c.Set(HeaderLayer, LayerRisk)
	msg := "refused by the shop's risk rules"
	if v.Reason != "" {
		msg += ": " + v.Reason
	}
	return seckill.Errorf(seckill.EFORBIDDEN, "%s", msg)
}

// riskNoAnswer decides an attempt the risk service did not answer for:
// fail open lets it on, fail closed answers 503 (retry once the shopper
// is asked again).
func (s *Server) riskNoAnswer(c *fiber.Ctx) error {
	s.cfg.Metrics.RiskChecks.WithLabelValues("no_answer").Inc()
	if !s.cfg.Risk.FailClosed {
		return nil
	}
	c.Set(HeaderLayer, LayerRisk)
	setRetryAfter(c, s.cfg.Risk.NoAnswerHold)
	return seckill.Errorf(seckill.EUNAVAILABLE, "the risk check did not answer in time; retry")
}

// devicePurpose derives the keys that sign device ids from the JWT
// secrets (derivedKeys): a deployment has one secret less to keep, and
// every API process agrees, across a rotation too.
const devicePurpose = "seckill device cookie v1"

// signDevice signs id with the current key.
func (s *Server) signDevice(id string) string {
	m := hmac.New(sha256.New, s.deviceKeys[0])
	m.Write([]byte(id))
	return id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// deviceID returns the request's device id from its cookie, "" when it
// has none; a cookie this shop did not sign (with any JWT secret of a
// rotation) is 400.
func (s *Server) deviceID(c *fiber.Ctx) (string, error) {
	raw := c.Cookies(DeviceCookie)
	if raw == "" {
		return "", nil
	}
	id, sig64, ok := strings.Cut(raw, ".")
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if !ok || len(id) != 32 || err != nil || !macOfAny(s.deviceKeys, []byte(id), sig) {
		return "", seckill.Errorf(seckill.EINVALID, "the %s cookie is not one this shop issued; reload the shop page", DeviceCookie)
	}
	return strings.Clone(id), nil
}

// device: GET /api/v1/device. Sets the device cookie (keeping a valid
// one's id, signed again with the current key: a rotation's new secret
// reaches the cookies of the pages that load) and says its id: the shop
// page calls it once when it loads.
func (s *Server) device(c *fiber.Ctx) error {
	id, err := s.deviceID(c)
	if err != nil || id == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		id = hex.EncodeToString(b[:])
	}
	c.Cookie(&fiber.Cookie{Name: DeviceCookie, Value: s.signDevice(id), Path: "/", HTTPOnly: true,
		SameSite: fiber.CookieSameSiteLaxMode, Secure: c.Protocol() == "https",
		MaxAge: int(deviceCookieAge.Seconds())})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"device_id": id, "max_age_seconds": int(deviceCookieAge.Seconds())})
}
