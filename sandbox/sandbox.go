// Package sandbox is an in-process payment provider for `seckill dev`, the
// tests and the bench: it pays orders by sending correctly signed webhooks
// to the API, and records refunds (idempotent on the payment id) so a test
// can check that every late payment was refunded exactly once.
package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
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
// API's status code; an error only when the API could not be reached.
func (p *Provider) Pay(ctx context.Context, orderNo, paymentID string, amountCents int64) (int, error) {
	c := &client.Client{BaseURL: p.APIBase, HTTP: p.Client, WebhookSecret: p.Secret}
	m, err := c.Pay(ctx, seckill.Payment{PaymentID: paymentID, OrderNo: orderNo, AmountCents: amountCents})
	if code := client.StatusCode(err); code != 0 {
		return code, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sandbox webhook: %w", err)
	}
	return m.StatusCode, nil
}
