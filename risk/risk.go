// Package risk asks the shop's own risk service about a purchase attempt
// before admission (SECKILL_RISK_URL): one signed JSON POST per shopper
// and session, answered within a few milliseconds. The protocol is in
// docs/risk.md; the API caches the answers and decides what no answer
// means (admission.RiskConfig).
package risk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/signature"
)

// Client is a seckill.RiskChecker over HTTP.
type Client struct {
	URL string
	// Secret, when set, signs every request (header Seckill-Signature,
	// the webhook scheme) so the risk service can tell it is us.
	Secret []byte
	// HTTP sends the checks (http.DefaultClient's transport when nil); its
	// redirects are never followed, whatever its CheckRedirect says.
	HTTP *http.Client
}

// maxAnswer bounds the answer read: a verdict is a few dozen bytes.
const maxAnswer = 4 << 10

// Check posts q and reads the verdict. The caller's context carries the
// deadline (a few milliseconds): the risk service is on the purchase path.
func (c *Client) Check(ctx context.Context, q seckill.RiskQuery) (seckill.RiskVerdict, error) {
	body, err := json.Marshal(q)
	if err != nil {
		return seckill.RiskVerdict{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return seckill.RiskVerdict{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if len(c.Secret) > 0 {
		req.Header.Set(signature.Header, signature.Sign(c.Secret, time.Now(), body))
	}
	var hc http.Client
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = signature.StayPut
	resp, err := hc.Do(req)
	if err != nil {
		return seckill.RiskVerdict{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return seckill.RiskVerdict{}, err
	}
	if err := signature.Redirected(resp, "SECKILL_RISK_URL"); err != nil {
		return seckill.RiskVerdict{}, fmt.Errorf("risk service %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return seckill.RiskVerdict{}, fmt.Errorf("risk service: %s: %.200s", resp.Status, raw)
	}
	var v struct {
		Allow  *bool  `json:"allow"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Allow == nil {
		return seckill.RiskVerdict{}, fmt.Errorf("risk service: the answer is not {\"allow\": bool}: %.200s", raw)
	}
	return seckill.RiskVerdict{Allow: *v.Allow, Reason: v.Reason}, nil
}
