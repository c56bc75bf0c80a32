// Package sandbox is an in-process payment provider for `seckill dev`, the
// tests and the bench: it pays orders by sending correctly signed webhooks
// to the API, and records refunds (idempotent on the payment id) so a test
// can check that every late payment was refunded exactly once.
package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// Provider is the sandbox payment provider.
type Provider struct {
	// APIBase is the seckill API the webhooks go to (http://host:port).
	APIBase string
	// Secret signs the webhooks (SECKILL_WEBHOOK_SECRET).
	Secret []byte
	Client *http.Client

	mu      sync.Mutex
	refunds map[string]seckill.Refund // payment id → refund
	calls   int
}

// Refund records a refund once per payment and returns its id.
func (p *Provider) Refund(_ context.Context, r seckill.Refund) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.refunds == nil {
		p.refunds = map[string]seckill.Refund{}
	}
	if _, ok := p.refunds[r.PaymentID]; !ok {
		p.refunds[r.PaymentID] = r
	}
	return "re_" + r.PaymentID, nil
}

// Refunds returns the refunds made, by payment id.
func (p *Provider) Refunds() map[string]seckill.Refund {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]seckill.Refund, len(p.refunds))
	for k, v := range p.refunds {
		out[k] = v
	}
	return out
}

// Pay sends the signed SUCCEEDED webhook of a payment and returns the
// API's status code.
func (p *Provider) Pay(ctx context.Context, orderNo, paymentID string, amountCents int64) (int, error) {
	body, err := json.Marshal(map[string]any{
		"event_id": "evt_" + paymentID, "payment_id": paymentID, "order_no": orderNo,
		"amount_cents": amountCents, "status": "SUCCEEDED",
	})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.APIBase+"/api/v1/payments/webhook", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(seckill.HeaderSignature, seckill.SignWebhook(p.Secret, time.Now(), body))
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("sandbox webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
