package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/paymenthttp"
	"github.com/seckill/seckill/paymentstripe"
	"github.com/seckill/seckill/sandbox"
)

// The payment providers, by SECKILL_PAYMENT_PROVIDER. SandboxProvider
// moves no money (its payments live in Redis, its refunds in memory), so
// it must be asked for by name; HTTPProvider calls the team's own adapter
// at SECKILL_PAYMENT_URL (package paymenthttp); StripeProvider charges
// through Stripe's PaymentIntents (package paymentstripe).
const (
	SandboxProvider = sandbox.Name
	HTTPProvider    = paymenthttp.Name
	StripeProvider  = paymentstripe.Name
)

// provider builds the configured payment provider: nil for the sandbox
// (the process's own, see Main.Provider) and when none is named (which
// the processes refuse: RequireProvider); an error when the name is
// unknown or its settings do not hold.
func (c *Config) provider() (seckill.PaymentProvider, error) {
	switch c.PaymentProvider {
	case "", SandboxProvider:
		return nil, nil
	case HTTPProvider:
		return paymenthttp.New(paymenthttp.Config{BaseURL: c.PaymentURL, RefundURL: c.PaymentRefundURL, Secret: []byte(c.PaymentProviderSecret)})
	case StripeProvider:
		return paymentstripe.New(paymentstripe.Config{SecretKey: c.StripeSecretKey, APIURL: c.StripeAPIURL, CheckoutURL: c.StripeCheckoutURL})
	default:
		return nil, fmt.Errorf("SECKILL_PAYMENT_PROVIDER=%q: the providers are %q (dev and tests), %q (your adapter at SECKILL_PAYMENT_URL) and %q (SECKILL_STRIPE_SECRET_KEY); see the README to add one",
			c.PaymentProvider, SandboxProvider, HTTPProvider, StripeProvider)
	}
}

// stripeEvents verifies Stripe's webhook events when Stripe is the
// provider (nil otherwise: the API then has no Stripe route). The API
// cannot take Stripe's payments without the endpoint's signing secret.
func (c *Config) stripeEvents() (api.StripeEvents, error) {
	if c.PaymentProvider != StripeProvider {
		return nil, nil
	}
	if c.StripeWebhookSecret == "" {
		return nil, errors.New("refusing to serve the API without SECKILL_STRIPE_WEBHOOK_SECRET: with SECKILL_PAYMENT_PROVIDER=stripe it verifies Stripe's events " +
			"(the signing secret, whsec_…, of the endpoint POST /api/v1/payments/stripe/webhook)")
	}
	return paymentstripe.Events{Secret: c.StripeWebhookSecret}, nil
}

// currency is Currency, or its default for a Config built by hand.
func (c *Config) currency() string {
	if c.Currency == "" {
		return "usd"
	}
	return c.Currency
}

// RequireProvider refuses to run a process that opens, applies or
// refunds payments (the API, the worker) without a provider chosen
// explicitly. Defaulting to the sandbox would serve its checkout pages,
// which sign their "payments" with the real webhook secret (anyone could
// pay an order for free), and mark every refund REFUNDED while no money
// went back.
func (c *Config) RequireProvider() error {
	if c.PaymentProvider == "" {
		return fmt.Errorf("refusing to start without SECKILL_PAYMENT_PROVIDER: the API opens payments and the worker applies and refunds them; "+
			"name %q or %q, or set SECKILL_PAYMENT_PROVIDER=%s explicitly to use the sandbox (dev and tests only: it moves no money)",
			StripeProvider, HTTPProvider, SandboxProvider)
	}
	return nil
}

// WarnProvider says loudly, at start, that refunds go nowhere real.
func (c *Config) WarnProvider(log *slog.Logger) {
	if c.PaymentProvider == SandboxProvider {
		log.Warn("SANDBOX PAYMENT PROVIDER: payments and refunds move no money; never run this in production",
			"SECKILL_PAYMENT_PROVIDER", c.PaymentProvider)
	}
}
