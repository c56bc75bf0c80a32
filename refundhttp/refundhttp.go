// Package refundhttp is a payment provider configured, not coded: seckill
// sends each refund as a signed HTTP request to a URL the team runs (a thin
// adapter in front of their real provider, in any language), and reads the
// refund id from the answer. So a provider is plugged in without changing
// seckill (SECKILL_PAYMENT_PROVIDER=http).
//
// The request: POST <URL>, body {"payment_id","order_no","amount_cents",
// "trace_id"}, headers Seckill-Signature (the same scheme as the payment
// webhook: HMAC-SHA256 over "<t>.<body>" with the shared secret) and
// Idempotency-Key = the payment id. The adapter must refund a payment once
// however often it is asked (the same payment → the same refund id).
// The answers:
//
//	200 {"refund_id": "..."}  refunded (or refunded before): done
//	409 or 422 {"message"}    refused for good (already refunded elsewhere,
//	                          amount over the captured one…): the run fails
//	                          without retries; the refund relay backs off,
//	                          then parks it for ops (`seckill refunds`)
//	anything else, timeouts   unknown or transient: retried by Temporal
package refundhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/seckill/seckill"
)

// Provider refunds through the team's HTTP adapter.
type Provider struct {
	url    string
	secret []byte
	http   *http.Client
}

// DefaultTimeout bounds one refund request; a slower answer is retried
// (the adapter is idempotent on the payment id).
const DefaultTimeout = 10 * time.Second

// New returns the provider of the adapter at rawURL (http or https) that
// verifies requests with secret.
func New(rawURL string, secret []byte) (*Provider, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("SECKILL_PAYMENT_REFUND_URL=%q must be an http(s) URL", rawURL)
	}
	if len(secret) < 16 {
		return nil, errors.New("SECKILL_PAYMENT_PROVIDER_SECRET must be at least 16 bytes: it signs every refund request")
	}
	return &Provider{url: u.String(), secret: secret, http: &http.Client{Timeout: DefaultTimeout}}, nil
}

// Refund asks the adapter to refund r and returns its refund id.
func (p *Provider) Refund(ctx context.Context, r seckill.Refund) (string, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", r.PaymentID)
	req.Header.Set("Seckill-Signature", seckill.SignWebhook(p.secret, time.Now(), body))
	resp, err := p.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("refund %s: %w", r.PaymentID, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		RefundID string `json:"refund_id"`
		Message  string `json:"message"`
	}
	_ = json.Unmarshal(raw, &out)
	switch {
	case resp.StatusCode == http.StatusOK && out.RefundID != "":
		return out.RefundID, nil
	case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusUnprocessableEntity:
		return "", seckill.Errorf(seckill.ECONFLICT, "the provider refused the refund of %s: %s", r.PaymentID, out.Message)
	default:
		// Not an answer to act on: 5xx, a proxy's page, a 200 without an
		// id. The outcome is unknown; the retry is safe.
		return "", fmt.Errorf("refund %s: the provider answered %d %q", r.PaymentID, resp.StatusCode, truncate(raw))
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
