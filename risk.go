package seckill

import "context"

// RiskQuery is what the shop's risk service is asked about a purchase
// attempt, before admission (SECKILL_RISK_URL).
type RiskQuery struct {
	SessionID int64  `json:"session_id"`
	UserID    int64  `json:"user_id"`
	IP        string `json:"ip"`
	UserAgent string `json:"user_agent"`
	// DeviceID is the shop page's signed device cookie ("" when the
	// client sent none).
	DeviceID string `json:"device_id,omitempty"`
}

// RiskVerdict is the risk service's answer: Allow, or the reason it gave.
type RiskVerdict struct {
	Allow  bool   `json:"allow"`
	Reason string `json:"reason,omitempty"`
}

// RiskChecker asks a risk service about a purchase attempt; an error is
// no answer (the caller fails open or closed, as configured).
type RiskChecker interface {
	Check(ctx context.Context, q RiskQuery) (RiskVerdict, error)
}
