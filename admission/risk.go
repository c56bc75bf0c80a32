package admission

import (
	"context"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// RiskConfig is what a purchase attempt passes before admission, after
// the rate limits: the User-Agent rules and, when one is configured, the
// shop's own risk service (without either, Screen skips the check).
// Seconds here are cheap next to a bot's unit: a refused attempt never
// touches stock.
type RiskConfig struct {
	// Checker is the shop's risk service (SECKILL_RISK_URL); nil: the
	// User-Agent rules only.
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
		var err error
		v, err = r.Checker.Check(ctx, seckill.RiskQuery{SessionID: a.Session.ID, UserID: a.UserID,
			IP: req.IP.String(), UserAgent: strings.Clone(ua), DeviceID: req.device})
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
