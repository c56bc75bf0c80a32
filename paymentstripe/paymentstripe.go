// Package paymentstripe is the Stripe payment provider
// (SECKILL_PAYMENT_PROVIDER=stripe), on stripe-go: one PaymentIntent per
// order, paid at the shop's own Stripe.js page with the intent's client
// secret. docs/payment-stripe.md says what is called when:
//
//	CreatePayment   POST /v1/payment_intents             Idempotency-Key: <order_no>
//	QueryPayment    GET  /v1/payment_intents/{id}        (search by metadata.order_no without an id)
//	CancelPayment   POST /v1/payment_intents/{id}/cancel (a succeeded intent stays SUCCEEDED)
//	Refund          POST /v1/refunds                     Idempotency-Key: refund:<payment_id>
//
// Stripe's answers are mapped to the domain's vocabulary once, here: a
// network error, a timeout, a 5xx, a rate limit or a refused key is
// EUNAVAILABLE (the caller retries; every call is safe to repeat), a
// refusal of the request itself (invalid request, card or idempotency
// error) is CONFLICT. The secret key never appears in an error or a log
// line. The payment's webhook is the api package's
// POST /api/v1/payments/stripe/webhook.
package paymentstripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/tracing"
)

// Name is the provider's name (SECKILL_PAYMENT_PROVIDER=stripe).
const Name = "stripe"

// MetadataOrderNo is the PaymentIntent metadata key carrying the order
// number: the webhook finds the order by it.
const MetadataOrderNo = "order_no"

// Config is the Stripe account seckill charges through.
type Config struct {
	// SecretKey authenticates every call (SECKILL_STRIPE_SECRET_KEY).
	SecretKey string
	// APIURL replaces Stripe's API base URL (SECKILL_STRIPE_API_URL):
	// stripe-mock in tests.
	APIURL string
	// CheckoutURL is the shop's own payment page, a template with the
	// placeholders {payment_id} and {client_secret}
	// (SECKILL_STRIPE_CHECKOUT_URL); empty: the checkout has no URL and
	// the shop builds its page from the client secret.
	CheckoutURL string
	// Timeout bounds one request (DefaultTimeout when 0).
	Timeout time.Duration
}

// DefaultTimeout bounds one request to Stripe.
const DefaultTimeout = 10 * time.Second

// Provider calls Stripe.
type Provider struct {
	client      *stripe.Client
	key         string
	checkoutURL string
	timeout     time.Duration
}

// New returns the provider of the account c names. Nothing is called yet.
func New(c Config) (*Provider, error) {
	if c.SecretKey == "" {
		return nil, errors.New("SECKILL_STRIPE_SECRET_KEY is required with SECKILL_PAYMENT_PROVIDER=stripe (a secret key sk_… or a restricted key rk_…)")
	}
	if !strings.HasPrefix(c.SecretKey, "sk_") && !strings.HasPrefix(c.SecretKey, "rk_") {
		// The value itself is never repeated: it may be a real key pasted
		// into the wrong variable.
		return nil, errors.New("SECKILL_STRIPE_SECRET_KEY must be a Stripe secret key (sk_…) or restricted key (rk_…); a publishable key (pk_…) cannot create payments")
	}
	p := &Provider{key: c.SecretKey, checkoutURL: c.CheckoutURL, timeout: c.Timeout}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	cfg := &stripe.BackendConfig{
		HTTPClient: &http.Client{Timeout: p.timeout, Transport: tracing.Transport(nil)},
		// One call is one request: the callers retry with their own
		// backoff (the checkout's client, the workflow's activities), and
		// a retry inside would outlive their deadlines.
		MaxNetworkRetries: stripe.Int64(0),
		// Errors are returned, mapped, and logged by the callers with the
		// order's trace id; stripe-go's own lines would say it twice.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("SECKILL_STRIPE_API_URL=%q must be an http(s) URL", c.APIURL)
		}
		cfg.URL = stripe.String(strings.TrimSuffix(u.String(), "/"))
	}
	if c.CheckoutURL != "" {
		u, err := url.Parse(c.CheckoutURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("SECKILL_STRIPE_CHECKOUT_URL=%q must be an http(s) URL (with {payment_id} and {client_secret} placeholders)", c.CheckoutURL)
		}
	}
	p.client = stripe.NewClient(c.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(cfg)))
	return p, nil
}

// Name implements seckill.PaymentProvider.
func (p *Provider) Name() string { return Name }

// CreatePayment opens the order's PaymentIntent. The idempotency key is
// the order number, so asking again (a shopper's second click, a retry
// after a timeout) returns the same intent and never charges twice.
func (p *Provider) CreatePayment(ctx context.Context, r seckill.CheckoutRequest) (*seckill.Checkout, error) {
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	params := &stripe.PaymentIntentCreateParams{
		Amount:                  stripe.Int64(r.AmountCents),
		Currency:                stripe.String(r.Currency),
		AutomaticPaymentMethods: &stripe.PaymentIntentCreateAutomaticPaymentMethodsParams{Enabled: stripe.Bool(true)},
	}
	params.AddMetadata(MetadataOrderNo, r.OrderNo)
	if r.TraceID != "" {
		params.AddMetadata("trace_id", r.TraceID)
	}
	params.SetIdempotencyKey(r.OrderNo)
	pi, err := p.client.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		return nil, p.mapError("create the payment of "+r.OrderNo, err)
	}
	if pi.ID == "" || pi.ClientSecret == "" {
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "stripe answered the payment of %s without id or client_secret", r.OrderNo)
	}
	return &seckill.Checkout{Provider: Name, OrderNo: r.OrderNo, PaymentID: pi.ID, ClientSecret: pi.ClientSecret,
		CheckoutURL: p.checkoutPage(pi), ExpiresAt: r.ExpiresAt}, nil
}

// checkoutPage fills the shop's page template for pi ("" without one).
func (p *Provider) checkoutPage(pi *stripe.PaymentIntent) string {
	if p.checkoutURL == "" {
		return ""
	}
	return strings.NewReplacer("{payment_id}", url.QueryEscape(pi.ID),
		"{client_secret}", url.QueryEscape(pi.ClientSecret)).Replace(p.checkoutURL)
}

// QueryPayment retrieves the order's intent and says where it stands.
func (p *Provider) QueryPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	pi, err := p.intent(ctx, ref)
	if err != nil {
		return seckill.ProviderPayment{}, err
	} else if pi == nil {
		return seckill.ProviderPayment{State: seckill.PaymentNone}, nil
	}
	return state(ref, pi)
}

// CancelPayment cancels the order's intent so it can never be paid. Stripe
// refuses to cancel an intent that succeeded (or was cancelled) first;
// the intent is then read again and its state answered: SUCCEEDED makes
// the order PAID instead of closing it.
func (p *Provider) CancelPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	if ref.PaymentID == "" {
		pi, err := p.intent(ctx, ref)
		if err != nil {
			return seckill.ProviderPayment{}, err
		} else if pi == nil {
			return seckill.ProviderPayment{State: seckill.PaymentNone}, nil // nothing to cancel
		}
		ref.PaymentID = pi.ID
	}
	pi, err := p.client.V1PaymentIntents.Cancel(ctx, ref.PaymentID, &stripe.PaymentIntentCancelParams{
		CancellationReason: stripe.String(string(stripe.PaymentIntentCancellationReasonAbandoned)),
	})
	var se *stripe.Error
	if errors.As(err, &se) && se.Code == stripe.ErrorCodePaymentIntentUnexpectedState {
		pi, err = p.client.V1PaymentIntents.Retrieve(ctx, ref.PaymentID, nil)
	}
	if err != nil {
		return seckill.ProviderPayment{}, p.mapError("cancel payment "+ref.PaymentID, err)
	}
	return state(ref, pi)
}

// Refund gives r's amount of the intent back. The idempotency key is the
// payment id, so a retried refund returns the same refund.
func (p *Provider) Refund(ctx context.Context, r seckill.Refund) (string, error) {
	ctx, cancel := p.deadline(ctx)
	defer cancel()
	params := &stripe.RefundCreateParams{PaymentIntent: stripe.String(r.PaymentID), Amount: stripe.Int64(r.AmountCents)}
	params.AddMetadata(MetadataOrderNo, r.OrderNo)
	if r.TraceID != "" {
		params.AddMetadata("trace_id", r.TraceID)
	}
	params.SetIdempotencyKey("refund:" + r.PaymentID)
	re, err := p.client.V1Refunds.Create(ctx, params)
	if err != nil {
		return "", p.mapError("refund payment "+r.PaymentID, err)
	}
	if re.ID == "" {
		return "", seckill.Errorf(seckill.EUNAVAILABLE, "stripe answered the refund of %s without an id", r.PaymentID)
	}
	return re.ID, nil
}

// intent is the order's PaymentIntent: by its id, or, when the checkout
// never learnt the id (the create's answer was lost), by a search on the
// order number. nil when the search finds none. Search is eventually
// consistent: an intent created seconds ago may be missing, and the order
// then closes; its payment, if the shopper still makes it, takes the late
// payment path (a refund).
func (p *Provider) intent(ctx context.Context, ref seckill.PaymentRef) (*stripe.PaymentIntent, error) {
	if ref.PaymentID != "" {
		pi, err := p.client.V1PaymentIntents.Retrieve(ctx, ref.PaymentID, nil)
		if err != nil {
			return nil, p.mapError("read payment "+ref.PaymentID, err)
		}
		return pi, nil
	}
	q := fmt.Sprintf("metadata['%s']:'%s'", MetadataOrderNo, strings.ReplaceAll(ref.OrderNo, "'", `\'`))
	params := &stripe.PaymentIntentSearchParams{SearchParams: stripe.SearchParams{Query: q, Limit: stripe.Int64(1), Single: true}}
	for pi, err := range p.client.V1PaymentIntents.Search(ctx, params) {
		if err != nil {
			return nil, p.mapError("find the payment of "+ref.OrderNo, err)
		}
		return pi, nil
	}
	return nil, nil
}

// state maps a PaymentIntent's status to the domain's.
func state(ref seckill.PaymentRef, pi *stripe.PaymentIntent) (seckill.ProviderPayment, error) {
	// An intent of another order must never pay this one. stripe-mock
	// echoes no metadata, so only a present order number is checked.
	if no := pi.Metadata[MetadataOrderNo]; no != "" && no != ref.OrderNo {
		return seckill.ProviderPayment{}, seckill.Errorf(seckill.ECONFLICT, "stripe payment %s belongs to order %s, not %s", pi.ID, no, ref.OrderNo)
	}
	out := seckill.ProviderPayment{PaymentID: pi.ID}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		out.State, out.AmountCents, out.Currency = seckill.PaymentSucceeded, pi.AmountReceived, string(pi.Currency)
	case stripe.PaymentIntentStatusProcessing:
		out.State = seckill.PaymentProcessing
	case stripe.PaymentIntentStatusCanceled:
		out.State = seckill.PaymentCanceled
	case stripe.PaymentIntentStatusRequiresPaymentMethod, stripe.PaymentIntentStatusRequiresConfirmation,
		stripe.PaymentIntentStatusRequiresAction, stripe.PaymentIntentStatusRequiresCapture:
		out.State = seckill.PaymentOpen
	default:
		// A status newer than this code: not an answer to decide on.
		return seckill.ProviderPayment{}, seckill.Errorf(seckill.EUNAVAILABLE, "stripe payment %s has status %q, unknown to seckill", pi.ID, pi.Status)
	}
	return out, nil
}

// deadline bounds a call by the provider's timeout, or ctx's deadline
// when that is sooner (the HTTP client's timeout bounds each request too).
func (p *Provider) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

// keyLike matches Stripe API keys, which Stripe's own messages may quote
// (masked or not).
var keyLike = regexp.MustCompile(`\b(sk|rk|pk)_(test|live)_[0-9A-Za-z*]+`)

// mapError turns what stripe-go returned into the domain's vocabulary:
// EUNAVAILABLE when the outcome is unknown or may change on a retry,
// CONFLICT when Stripe refused the request itself. The message names the
// call, Stripe's type, code and request id, never the key.
func (p *Provider) mapError(call string, err error) error {
	var se *stripe.Error
	if !errors.As(err, &se) {
		// No answer: a timeout, a refused connection, a body that is not
		// Stripe's JSON (a proxy's page). Unknown outcome; the retry is safe.
		why := "did not answer"
		if errors.Is(err, context.DeadlineExceeded) {
			why = "did not answer in time"
		}
		return fmt.Errorf("%w: %s", seckill.Errorf(seckill.EUNAVAILABLE, "stripe %s (%s); retry", why, call), p.redact(err.Error()))
	}
	msg := fmt.Sprintf("%s: %d %s", call, se.HTTPStatusCode, se.Type)
	if se.Code != "" {
		msg += " " + string(se.Code)
	}
	if se.Msg != "" {
		msg += ": " + se.Msg
	}
	if se.RequestID != "" {
		msg += " (request " + se.RequestID + ")"
	}
	msg = p.redact(msg)
	switch {
	case se.HTTPStatusCode >= 500, se.Type == stripe.ErrorTypeAPI,
		// Rate limited, or another request with the same key in flight.
		se.HTTPStatusCode == http.StatusTooManyRequests, se.HTTPStatusCode == http.StatusConflict,
		// The key is wrong or lacks a permission: a configuration to fix,
		// after which the same call succeeds.
		se.HTTPStatusCode == http.StatusUnauthorized, se.HTTPStatusCode == http.StatusForbidden:
		return seckill.Errorf(seckill.EUNAVAILABLE, "stripe could not %s", msg)
	default:
		return seckill.Errorf(seckill.ECONFLICT, "stripe refused to %s", msg)
	}
}

func (p *Provider) redact(s string) string {
	return keyLike.ReplaceAllString(strings.ReplaceAll(s, p.key, "[redacted]"), "[redacted]")
}
