package bench

import (
	"encoding/json"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// Outcome codes: how one admission request ended, the keys of Step.Latency
// and of Outcomes.
const (
	OutAccepted      = "accepted"
	OutSoldOutMemory = "soldout_memory"
	OutSoldOutRedis  = "soldout_redis"
	OutLimit         = "limit"
	OutRateLimited   = "rate_limited"
	OutWindow        = "window"
	OutNotEligible   = "not_eligible"
	OutError         = "error"
)

// Outcome names an outcome code for people.
type Outcome struct{ Code, Name string }

// Outcomes are every outcome, in the order a request meets them from the
// happy path outwards; the reports list them so.
var Outcomes = []Outcome{
	{OutAccepted, "Accepted"},
	{OutSoldOutMemory, "Sold out (fast path)"},
	{OutSoldOutRedis, "Sold out (Redis)"},
	{OutLimit, "Per-user limit exceeded"},
	{OutRateLimited, "Rate limited"},
	{OutWindow, "Outside the sale window"},
	{OutNotEligible, "Not registered (reserved sale)"},
	{OutError, "Other errors"},
}

// OutcomeName is the name of an outcome code; the code itself for one this
// build does not know (a report written by another version).
func OutcomeName(code string) string {
	for _, o := range Outcomes {
		if o.Code == code {
			return o.Name
		}
	}
	return code
}

// classify names the outcome of one admission from its status, error code
// and the layer the API says decided it.
func classify(code int, body []byte, layer string, err error) string {
	if err != nil {
		return OutError
	}
	if code == 202 {
		return OutAccepted
	}
	var e seckill.ErrorBody
	_ = json.Unmarshal(body, &e)
	switch {
	case layer == api.LayerSoldOutMemory:
		return OutSoldOutMemory
	case e.Code == seckill.ESOLDOUT:
		return OutSoldOutRedis
	case e.Code == seckill.ELIMIT:
		return OutLimit
	case e.Code == seckill.ERATELIMITED:
		return OutRateLimited
	case e.Code == seckill.ENOTSTARTED || e.Code == seckill.EENDED:
		return OutWindow
	case e.Code == seckill.ENOTELIGIBLE:
		return OutNotEligible
	default:
		return OutError
	}
}
