// Package paymenthttp is a payment provider configured, not coded: seckill
// sends each call of a payment's life as a signed HTTP request to an
// adapter the team runs in front of their real provider (in any language),
// so a provider is plugged in without changing seckill
// (SECKILL_PAYMENT_PROVIDER=http). docs/payment-http.md is the protocol,
// with a JSON example per call:
//
//	POST <base>/payments          open the order's payment (idempotent on the order number)
//	POST <base>/payments/query    where the order's payment stands
//	POST <base>/payments/cancel   make it unpayable (a paid one stays SUCCEEDED)
//	POST <refund URL>             refund a payment (idempotent on the payment id)
//
// Every request carries Seckill-Signature (HMAC-SHA256 over "<t>.<body>"
// with the shared secret, the scheme of the payment webhook) and an
// Idempotency-Key. The answers: 200 with the call's JSON is done; 409 or
// 422 {"message"} is a refusal for good; anything else, and a timeout, is
// unknown and retried (every call is safe to repeat).
package paymenthttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/signature"
	"github.com/seckill/seckill/tracing"
)

// Name is the provider's name (SECKILL_PAYMENT_PROVIDER=http).
const Name = "http"

// Config is where the adapter listens and the key both sides sign with.
type Config struct {
	// BaseURL is the adapter's payments API (SECKILL_PAYMENT_URL).
	BaseURL string
	// RefundURL is where refunds go (SECKILL_PAYMENT_REFUND_URL; BaseURL +
	// "/refunds" when empty).
	RefundURL string
	// Secret signs every request (SECKILL_PAYMENT_PROVIDER_SECRET).
	Secret []byte
	// Timeout bounds one request (DefaultTimeout when 0); a slower answer
	// is retried (every call is idempotent).
	Timeout time.Duration
}

// DefaultTimeout bounds one request to the adapter.
const DefaultTimeout = 10 * time.Second

// Provider calls the team's HTTP adapter.
type Provider struct {
	base, refund string
	refundVar    string // the setting refund comes from
	secret       []byte
	http         *http.Client
}

// New returns the provider of the adapter c names.
func New(c Config) (*Provider, error) {
	p := &Provider{secret: c.Secret, refundVar: "SECKILL_PAYMENT_URL",
		http: &http.Client{Timeout: c.Timeout, Transport: tracing.Transport(nil), CheckRedirect: signature.StayPut}}
	if p.http.Timeout <= 0 {
		p.http.Timeout = DefaultTimeout
	}
	var err error
	if c.BaseURL != "" {
		if p.base, err = httpURL("SECKILL_PAYMENT_URL", c.BaseURL); err != nil {
			return nil, err
		}
		p.base = strings.TrimSuffix(p.base, "/")
	}
	switch {
	case c.RefundURL != "":
		if p.refund, err = httpURL("SECKILL_PAYMENT_REFUND_URL", c.RefundURL); err != nil {
			return nil, err
		}
		p.refundVar = "SECKILL_PAYMENT_REFUND_URL"
	case p.base != "":
		p.refund = p.base + "/refunds"
	default:
		return nil, errors.New("SECKILL_PAYMENT_URL must name the payment adapter (http or https)")
	}
	if len(c.Secret) < 16 {
		return nil, errors.New("SECKILL_PAYMENT_PROVIDER_SECRET must be at least 16 bytes: it signs every request to the payment adapter")
	}
	return p, nil
}

func httpURL(name, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q must be an http(s) URL", name, raw)
	}
	return u.String(), nil
}

// Name implements seckill.PaymentProvider.
func (p *Provider) Name() string { return Name }

// createBody is the request of POST <base>/payments.
type createBody struct {
	OrderNo     string    `json:"order_no"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	ExpiresAt   time.Time `json:"expires_at"`
	TraceID     string    `json:"trace_id,omitempty"`
}

// paymentBody is the adapter's answer about a payment.
type paymentBody struct {
	PaymentID    string    `json:"payment_id"`
	Status       string    `json:"status"`
	AmountCents  int64     `json:"amount_cents"`
	Currency     string    `json:"currency"`
	CheckoutURL  string    `json:"checkout_url"`
	ClientSecret string    `json:"client_secret"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// refBody is the request of the query and the cancel.
type refBody struct {
	OrderNo   string `json:"order_no"`
	PaymentID string `json:"payment_id,omitempty"`
}

// CreatePayment opens the order's payment at the adapter.
func (p *Provider) CreatePayment(ctx context.Context, r seckill.CheckoutRequest) (*seckill.Checkout, error) {
	if p.base == "" {
		return nil, errors.New("SECKILL_PAYMENT_URL is not set: the adapter cannot open payments")
	}
	var out paymentBody
	body := createBody{OrderNo: r.OrderNo, AmountCents: r.AmountCents, Currency: r.Currency, ExpiresAt: r.ExpiresAt.UTC(), TraceID: r.TraceID}
	if err := p.call(ctx, p.base+"/payments", r.OrderNo, body, &out); err != nil {
		return nil, err
	}
	if out.PaymentID == "" || out.CheckoutURL == "" {
		return nil, fmt.Errorf("payment of %s: the adapter answered without payment_id or checkout_url", r.OrderNo)
	}
	return &seckill.Checkout{Provider: Name, OrderNo: r.OrderNo, PaymentID: out.PaymentID, CheckoutURL: out.CheckoutURL,
		ClientSecret: out.ClientSecret, ExpiresAt: out.ExpiresAt}, nil
}

// QueryPayment asks the adapter where the order's payment stands.
func (p *Provider) QueryPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	return p.state(ctx, "/payments/query", "query:"+ref.OrderNo, ref)
}

// CancelPayment asks the adapter to make the order's payment unpayable.
func (p *Provider) CancelPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	return p.state(ctx, "/payments/cancel", "cancel:"+ref.OrderNo, ref)
}

func (p *Provider) state(ctx context.Context, path, key string, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	if p.base == "" {
		// Refunds only: no payment is opened through this adapter, so none
		// can be open at the close.
		return seckill.ProviderPayment{PaymentID: ref.PaymentID, State: seckill.PaymentNone}, nil
	}
	var out paymentBody
	if err := p.call(ctx, p.base+path, key, refBody(ref), &out); err != nil {
		return seckill.ProviderPayment{}, err
	}
	st := seckill.PaymentState(out.Status)
	switch st {
	case seckill.PaymentNone, seckill.PaymentOpen, seckill.PaymentProcessing, seckill.PaymentSucceeded, seckill.PaymentCanceled:
	default:
		return seckill.ProviderPayment{}, fmt.Errorf("payment of %s: the adapter answered status %q", ref.OrderNo, out.Status)
	}
	if out.Currency != "" && !seckill.ValidCurrency(out.Currency) {
		return seckill.ProviderPayment{}, fmt.Errorf("payment of %s: the adapter answered currency %q, not a lower-case ISO 4217 code", ref.OrderNo, out.Currency)
	}
	return seckill.ProviderPayment{PaymentID: out.PaymentID, State: st, AmountCents: out.AmountCents, Currency: out.Currency}, nil
}

// Refund asks the adapter to refund r and returns its refund id.
func (p *Provider) Refund(ctx context.Context, r seckill.Refund) (string, error) {
	var out struct {
		RefundID string `json:"refund_id"`
	}
	if err := p.call(ctx, p.refund, r.PaymentID, r, &out); err != nil {
		return "", err
	}
	if out.RefundID == "" {
		return "", fmt.Errorf("refund %s: the adapter answered without refund_id", r.PaymentID)
	}
	return out.RefundID, nil
}

// call posts body, signed, to url and decodes a 200 answer into out. A 409
// or 422 is a refusal for good (CONFLICT); anything else is unknown and
// safe to retry.
func (p *Provider) call(ctx context.Context, url, key string, body, out any) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(signature.Header, signature.Sign(p.secret, time.Now(), raw))
	resp, err := p.http.Do(req)
	if err != nil {
		return fmt.Errorf("payment adapter %s: %w", key, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	setting := "SECKILL_PAYMENT_URL"
	if url == p.refund {
		setting = p.refundVar
	}
	if err := signature.Redirected(resp, setting); err != nil {
		// Unknown as any answer that is not one: retried, and the error
		// says which address to set.
		return fmt.Errorf("payment adapter %s: %w", key, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated:
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("payment adapter %s: answer is not JSON: %q", key, truncate(answer))
		}
		return nil
	case http.StatusConflict, http.StatusUnprocessableEntity:
		var refusal struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(answer, &refusal)
		return seckill.Errorf(seckill.ECONFLICT, "the payment provider refused %s: %s", key, refusal.Message)
	default:
		// Not an answer to act on: 5xx, a proxy's page. The outcome is
		// unknown; the retry is safe.
		return fmt.Errorf("payment adapter %s: answered %d %q", key, resp.StatusCode, truncate(answer))
	}
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
