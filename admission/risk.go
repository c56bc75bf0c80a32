package admission

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
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

func (r *RiskConfig) defaults() {
	if r.Timeout <= 0 {
		r.Timeout = DefaultRiskTimeout
	}
	if r.CacheTTL <= 0 {
		r.CacheTTL = DefaultRiskCache
	}
	if r.NoAnswerHold <= 0 {
		r.NoAnswerHold = DefaultRiskNoAnswerHold
	}
}

type riskKey struct{ session, user int64 }

// riskCaches hold the risk service's answers per shopper and session
// (RiskConfig.CacheTTL), and that it missed its deadline for one a moment
// ago (RiskConfig.NoAnswerHold).
type riskCaches struct {
	verdicts *expiring.Map[riskKey, seckill.RiskVerdict]
	missed   *expiring.Map[riskKey, struct{}]
}

func newRiskCaches() riskCaches {
	return riskCaches{verdicts: expiring.New[riskKey, seckill.RiskVerdict](riskCacheSize),
		missed: expiring.New[riskKey, struct{}](riskCacheSize)}
}

// riskCheck applies the risk rules to an attempt; an Answer without Err
// lets it go on.
func (s *Service) riskCheck(ctx context.Context, req *Request, a *seckill.Attempt) Answer {
	r := &s.Risk
	ua := string(req.UserAgent)
	for _, deny := range r.UserAgentDeny {
		if (deny == "-" && ua == "") || (deny != "-" && deny != "" && strings.Contains(strings.ToLower(ua), strings.ToLower(deny))) {
			s.Metrics.RiskChecks.WithLabelValues("user_agent").Inc()
			return Answer{Err: seckill.Errorf(seckill.EFORBIDDEN, "this client may not buy (User-Agent rule)"), Layer: LayerRisk}
		}
	}
	device, err := s.DeviceID(req.DeviceCookie)
	if err != nil {
		return Answer{Err: err}
	}
	if device != "" && s.Limits.Device > 0 {
		if ans := s.Limits.allow(ctx, "device:"+device, s.Limits.Device); ans.Err != nil {
			return ans
		}
	}
	if r.Checker == nil {
		return Answer{}
	}
	k := riskKey{a.Session.ID, a.UserID}
	now := time.Now()
	v, cached := s.risk.verdicts.Get(k, now)
	if cached {
		s.Metrics.RiskChecks.WithLabelValues("cached").Inc()
	} else {
		if _, missed := s.risk.missed.Get(k, now); missed {
			return s.riskNoAnswer() // it missed this shopper a moment ago
		}
		ctx, cancel := context.WithTimeout(ctx, r.Timeout)
		v, err = r.Checker.Check(ctx, seckill.RiskQuery{SessionID: a.Session.ID, UserID: a.UserID,
			IP: req.IP.String(), UserAgent: strings.Clone(ua), DeviceID: device})
		cancel()
		if err != nil {
			s.risk.missed.Put(k, struct{}{}, now.Add(r.NoAnswerHold))
			return s.riskNoAnswer()
		}
		s.risk.verdicts.GetOrPut(k, now, r.CacheTTL, func() seckill.RiskVerdict { return v })
	}
	if v.Allow {
		if !cached {
			s.Metrics.RiskChecks.WithLabelValues("allow").Inc()
		}
		return Answer{}
	}
	if !cached {
		s.Metrics.RiskChecks.WithLabelValues("deny").Inc()
	}
	msg := "refused by the shop's risk rules"
	if v.Reason != "" {
		msg += ": " + v.Reason
	}
	return Answer{Err: seckill.Errorf(seckill.EFORBIDDEN, "%s", msg), Layer: LayerRisk}
}

// riskNoAnswer decides an attempt the risk service did not answer for:
// fail open lets it on, fail closed answers 503 (retry once the shopper
// is asked again).
func (s *Service) riskNoAnswer() Answer {
	s.Metrics.RiskChecks.WithLabelValues("no_answer").Inc()
	if !s.Risk.FailClosed {
		return Answer{}
	}
	return Answer{Err: seckill.Errorf(seckill.EUNAVAILABLE, "the risk check did not answer in time; retry"),
		Layer: LayerRisk, RetryAfter: s.Risk.NoAnswerHold}
}

// DeviceCookie is the shop page's device cookie: "<id>.<signature>",
// signed with a key derived from the JWT secret so that no client can
// make one up.
const DeviceCookie = "seckill_device"

// devicePurpose derives the keys that sign device ids from the JWT
// secrets (derivedKeys): a deployment has one secret less to keep, and
// every API process agrees, across a rotation too.
const devicePurpose = "seckill device cookie v1"

// SignDevice is the device cookie of id, signed with the current key.
func (s *Service) SignDevice(id string) string {
	m := hmac.New(sha256.New, s.deviceKeys[0])
	m.Write([]byte(id))
	return id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// DeviceID returns the device id of a device cookie's value, "" for
// none; a cookie this shop did not sign (with any JWT secret of a
// rotation) is INVALID_ARGUMENT.
func (s *Service) DeviceID(raw string) (string, error) {
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

// derivedKeys derives a key for one purpose from each JWT secret, in
// their order (the first signs): tickets and device cookies need no
// secret of their own, rotate with it, and cannot be taken for a token
// or for each other.
func derivedKeys(secrets [][]byte, purpose string) [][]byte {
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(purpose))
		keys[i] = m.Sum(nil)
	}
	return keys
}

// macOfAny reports whether sig is the HMAC-SHA256 of payload under any
// of keys.
func macOfAny(keys [][]byte, payload, sig []byte) bool {
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write(payload)
		if hmac.Equal(sig, m.Sum(nil)) {
			return true
		}
	}
	return false
}
