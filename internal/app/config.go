package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/paymenthttp"
	"github.com/seckill/seckill/paymentstripe"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/risk"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/temporal/starter"
)

// Config is read from the environment; the defaults serve a local machine.
// Defaults that are facts of another package have no envDefault tag: they
// come from that package (defaultConfig), so each is defined once.
type Config struct {
	MySQLDSN string `env:"SECKILL_MYSQL_DSN" envDefault:"root:@tcp(127.0.0.1:3306)/seckill?parseTime=true"`
	// RedisAddr is one address (a single node), a comma-separated list
	// (Redis Cluster seeds) or, with RedisMaster, the Sentinels' addresses:
	// go-redis's universal client rules (see Redis).
	RedisAddr         string        `env:"SECKILL_REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	RedisMaster       string        `env:"SECKILL_REDIS_MASTER"`
	RedisPassword     string        `env:"SECKILL_REDIS_PASSWORD"`
	RedisTLS          bool          `env:"SECKILL_REDIS_TLS"`
	RedisPrefix       string        `env:"SECKILL_REDIS_PREFIX" envDefault:"seckill"`
	TemporalAddr      string        `env:"SECKILL_TEMPORAL_ADDR" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string        `env:"SECKILL_TEMPORAL_NAMESPACE" envDefault:"default"`
	TaskQueue         string        `env:"SECKILL_TASK_QUEUE" envDefault:"seckill-orders"`
	HTTPAddr          string        `env:"SECKILL_HTTP_ADDR" envDefault:":8080"`
	PayTimeout        time.Duration `env:"SECKILL_PAY_TIMEOUT"` // seckill.DefaultPayTimeout
	// StartTimeout is deprecated and ignored: no request waits for its
	// workflow start any more (the API's starter starts it after the
	// answer). Still parsed, so an old deployment that sets it starts.
	StartTimeout time.Duration `env:"SECKILL_START_TIMEOUT"`
	SweepGrace   time.Duration `env:"SECKILL_SWEEP_GRACE"` // seckill.DefaultSweepGrace
	// PayGrace is how long an unpaid order stays open past its deadline
	// (or a cancel) while its payment provider cannot say whether it was
	// paid; then it closes anyway.
	PayGrace time.Duration `env:"SECKILL_PAY_GRACE"` // seckill.DefaultPayGrace
	// Currency is what sessions' prices are in, as the payment provider
	// is asked for them (ISO 4217, lower case).
	Currency string `env:"SECKILL_CURRENCY" envDefault:"usd"`
	// PreheatLead and RetainAfter shape each session's life (its
	// SessionWorkflow): preheated this long before its start, its Redis
	// keys expire this long after it ended and went quiet.
	PreheatLead time.Duration `env:"SECKILL_PREHEAT_LEAD"` // seckill.DefaultPreheatLead
	RetainAfter time.Duration `env:"SECKILL_RETAIN_AFTER"` // seckill.DefaultRetainAfter
	// RelayMinAge leaves a pending-start entry to the APIs for this long
	// before the worker's relay (the safety net) starts it.
	RelayMinAge    time.Duration `env:"SECKILL_RELAY_MIN_AGE"` // relay.DefaultMinAge
	LimitGlobalRPS int           `env:"SECKILL_LIMIT_GLOBAL_RPS" envDefault:"20000"`
	LimitUserRPS   int           `env:"SECKILL_LIMIT_USER_RPS" envDefault:"5"`
	LimitIPRPS     int           `env:"SECKILL_LIMIT_IP_RPS" envDefault:"200"`
	LimitReadRPS   int           `env:"SECKILL_LIMIT_READ_RPS" envDefault:"100"`
	LimitDeviceRPS int           `env:"SECKILL_LIMIT_DEVICE_RPS" envDefault:"5"`
	// The risk check before admission (api.RiskConfig): the shop's risk
	// service, its request signing key, its deadline, what no answer
	// means ("open": go on, "closed": 503), how long a verdict holds per
	// shopper, and the User-Agent rules (comma-separated substrings, "-"
	// for none at all).
	RiskURL           string        `env:"SECKILL_RISK_URL"`
	RiskSecret        string        `env:"SECKILL_RISK_SECRET"`
	RiskTimeout       time.Duration `env:"SECKILL_RISK_TIMEOUT" envDefault:"10ms"`
	RiskFail          string        `env:"SECKILL_RISK_FAIL" envDefault:"open"`
	RiskCache         time.Duration `env:"SECKILL_RISK_CACHE" envDefault:"30s"`
	RiskUserAgentDeny string        `env:"SECKILL_RISK_UA_DENY"`
	ProxyHeader       string        `env:"SECKILL_PROXY_HEADER"`
	TrustedProxies    string        `env:"SECKILL_TRUSTED_PROXIES"`
	PaymentProvider   string        `env:"SECKILL_PAYMENT_PROVIDER"`
	// PaymentURL, PaymentRefundURL and PaymentProviderSecret configure the
	// http provider (package paymenthttp): the adapter's payments API,
	// where refunds are sent (PaymentURL + "/refunds" when empty), and the
	// key that signs every request.
	PaymentURL            string `env:"SECKILL_PAYMENT_URL"`
	PaymentRefundURL      string `env:"SECKILL_PAYMENT_REFUND_URL"`
	PaymentProviderSecret string `env:"SECKILL_PAYMENT_PROVIDER_SECRET"`
	// StripeSecretKey, StripeAPIURL and StripeCheckoutURL configure the
	// stripe provider (package paymentstripe): the account's secret key,
	// another API base URL (stripe-mock in tests), and the shop's own
	// payment page ({payment_id} and {client_secret} filled in).
	// StripeWebhookSecret verifies the events Stripe sends the API.
	StripeSecretKey     string `env:"SECKILL_STRIPE_SECRET_KEY"`
	StripeWebhookSecret string `env:"SECKILL_STRIPE_WEBHOOK_SECRET"`
	StripeAPIURL        string `env:"SECKILL_STRIPE_API_URL"`
	StripeCheckoutURL   string `env:"SECKILL_STRIPE_CHECKOUT_URL"`
	// EventsURL receives the order events as signed webhooks (signed
	// with EventsSecret, which it requires), each parked after
	// EventsAttempts failed deliveries; unset: events are recorded and
	// listed in the feed, not sent.
	EventsURL      string        `env:"SECKILL_EVENTS_URL"`
	EventsSecret   string        `env:"SECKILL_EVENTS_SECRET"`
	EventsAttempts int           `env:"SECKILL_EVENTS_ATTEMPTS"` // seckill.DefaultEventAttempts
	ReconcileEvery time.Duration `env:"SECKILL_RECONCILE_EVERY" envDefault:"1m"`
	EagerStart     bool          `env:"SECKILL_EAGER_START" envDefault:"true"`
	// StarterYield is how long the API's starter may hold an order's
	// workflow start while a burst is being answered (starter.Config.Busy);
	// 0 turns the yield off.
	StarterYield   time.Duration `env:"SECKILL_STARTER_YIELD"` // starter.DefaultYield
	PprofAddr      string        `env:"SECKILL_PPROF_ADDR"`
	WorkerHTTPAddr string        `env:"SECKILL_WORKER_HTTP_ADDR" envDefault:":8081"`
	ObserveEvery   time.Duration `env:"SECKILL_OBSERVE_EVERY" envDefault:"5s"`
	// DrainDelay is how long an API told to stop (SIGTERM) keeps serving
	// with /readyz at 503, so balancers take it out before it closes.
	DrainDelay time.Duration `env:"SECKILL_DRAIN_DELAY" envDefault:"5s"`
	// JWTSecret and WebhookSecret are comma-separated lists during a
	// rotation: the first signs, any verifies (see JWTSecrets).
	JWTSecret     string `env:"SECKILL_JWT_SECRET"`
	WebhookSecret string `env:"SECKILL_WEBHOOK_SECRET"`
	// AdminToken is the bootstrap admin; operators are named tokens
	// (seckill operators) or the identity provider's (AdminJWKSURL).
	AdminToken string `env:"SECKILL_ADMIN_TOKEN"`
	// JWTJWKSURL, JWTIssuer and JWTAudience admit the RS256/ES256 tokens
	// of the shop's own login service besides ours.
	JWTJWKSURL  string `env:"SECKILL_JWT_JWKS_URL"`
	JWTIssuer   string `env:"SECKILL_JWT_ISSUER"`
	JWTAudience string `env:"SECKILL_JWT_AUDIENCE"`
	// AdminJWKSURL, AdminIssuer and AdminAudience admit the company
	// identity provider's access tokens on the admin API; the role is the
	// AdminRoleClaim claim, the name recorded the AdminNameClaim one.
	AdminJWKSURL   string `env:"SECKILL_ADMIN_JWKS_URL"`
	AdminIssuer    string `env:"SECKILL_ADMIN_ISSUER"`
	AdminAudience  string `env:"SECKILL_ADMIN_AUDIENCE"`
	AdminRoleClaim string `env:"SECKILL_ADMIN_ROLE_CLAIM" envDefault:"seckill_role"`
	AdminNameClaim string `env:"SECKILL_ADMIN_NAME_CLAIM" envDefault:"email"`
	// OperatorToken is what the CLI's admin commands (session, orders
	// refund) authenticate with; SECKILL_ADMIN_TOKEN when unset.
	OperatorToken string     `env:"SECKILL_OPERATOR_TOKEN"`
	LogLevel      slog.Level `env:"SECKILL_LOG_LEVEL" envDefault:"INFO"`

	// trusted is TrustedProxies parsed.
	trusted []netip.Prefix
}

// defaultConfig is the configuration before the environment is read: the
// defaults owned by other packages. An unset or empty variable keeps them.
func defaultConfig() Config {
	return Config{
		PayTimeout:     seckill.DefaultPayTimeout,
		SweepGrace:     seckill.DefaultSweepGrace,
		PayGrace:       seckill.DefaultPayGrace,
		RelayMinAge:    relay.DefaultMinAge,
		PreheatLead:    seckill.DefaultPreheatLead,
		RetainAfter:    seckill.DefaultRetainAfter,
		StarterYield:   starter.DefaultYield,
		EventsAttempts: seckill.DefaultEventAttempts,
	}
}

// LoadConfig reads the configuration from the environment and validates it
// before anything connects.
func LoadConfig() (*Config, error) {
	c := defaultConfig()
	if err := env.Parse(&c); err != nil {
		return nil, err
	}
	if c.PayTimeout <= 0 || c.SweepGrace <= 0 || c.PayGrace <= 0 || c.RelayMinAge <= 0 || c.RetainAfter <= 0 || c.PreheatLead <= 0 {
		return nil, errors.New("SECKILL_PAY_TIMEOUT, SECKILL_SWEEP_GRACE, SECKILL_PAY_GRACE, SECKILL_RELAY_MIN_AGE, SECKILL_PREHEAT_LEAD and SECKILL_RETAIN_AFTER must be positive durations")
	}
	if !seckill.ValidCurrency(c.Currency) {
		return nil, fmt.Errorf("SECKILL_CURRENCY=%q must be a lower-case ISO 4217 code such as usd", c.Currency)
	}
	if _, err := c.provider(); err != nil {
		return nil, err
	}
	if c.StarterYield < 0 {
		return nil, errors.New("SECKILL_STARTER_YIELD must be 0 (off) or a positive duration")
	}
	if err := c.checkEvents(); err != nil {
		return nil, err
	}
	if c.ObserveEvery <= 0 {
		return nil, errors.New("SECKILL_OBSERVE_EVERY must be a positive duration")
	}
	if c.DrainDelay < 0 {
		return nil, errors.New("SECKILL_DRAIN_DELAY must be 0 (stop at once) or a positive duration")
	}
	if err := c.checkRisk(); err != nil {
		return nil, err
	}
	if c.LimitGlobalRPS < 0 || c.LimitUserRPS < 0 || c.LimitIPRPS < 0 || c.LimitReadRPS < 0 || c.LimitDeviceRPS < 0 {
		return nil, errors.New("SECKILL_LIMIT_*_RPS must be 0 (off) or a positive number of requests per second")
	}
	if len(redis.ParseAddrs(c.RedisAddr)) == 0 {
		return nil, errors.New("SECKILL_REDIS_ADDR must name at least one host:port")
	}
	if err := c.parseProxies(); err != nil {
		return nil, err
	}
	if err := c.checkIdentity(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkEvents validates SECKILL_EVENTS_*: an absolute http(s) URL, never
// without its secret (a receiver could not tell our events from anyone's),
// and a positive number of attempts.
func (c *Config) checkEvents() error {
	if c.EventsAttempts <= 0 {
		return errors.New("SECKILL_EVENTS_ATTEMPTS must be a positive number of delivery attempts")
	}
	if c.EventsURL == "" {
		return nil
	}
	if u, err := url.Parse(c.EventsURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SECKILL_EVENTS_URL=%q must be an absolute http or https URL", c.EventsURL)
	}
	if c.EventsSecret == "" {
		return errors.New("SECKILL_EVENTS_URL is set without SECKILL_EVENTS_SECRET: the events would go out unsigned; set the secret the receiver checks")
	}
	return nil
}

// checkRisk validates SECKILL_RISK_*.
func (c *Config) checkRisk() error {
	if c.RiskFail != "open" && c.RiskFail != "closed" {
		return fmt.Errorf("SECKILL_RISK_FAIL=%q must be open (an unanswered check lets the purchase go on) or closed (503)", c.RiskFail)
	}
	if c.RiskTimeout <= 0 || c.RiskCache <= 0 {
		return errors.New("SECKILL_RISK_TIMEOUT and SECKILL_RISK_CACHE must be positive durations")
	}
	if c.RiskURL == "" {
		return nil
	}
	if u, err := url.Parse(c.RiskURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("SECKILL_RISK_URL=%q must be an absolute http or https URL", c.RiskURL)
	}
	return nil
}

// Risk is the API's risk check as SECKILL_RISK_* say.
func (c *Config) Risk() api.RiskConfig {
	r := api.RiskConfig{Timeout: c.RiskTimeout, FailClosed: c.RiskFail == "closed", CacheTTL: c.RiskCache}
	for _, s := range strings.Split(c.RiskUserAgentDeny, ",") {
		if s = strings.TrimSpace(s); s != "" {
			r.UserAgentDeny = append(r.UserAgentDeny, s)
		}
	}
	if c.RiskURL != "" {
		r.Checker = &risk.Client{URL: c.RiskURL, Secret: []byte(c.RiskSecret), HTTP: &http.Client{
			Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}}
	}
	return r
}

// Redis is where Redis is, as SECKILL_REDIS_* say: one address is a single
// node, several a Redis Cluster's seeds, and with SECKILL_REDIS_MASTER they
// are Sentinels.
func (c *Config) Redis() redis.Server {
	return redis.Server{Addrs: redis.ParseAddrs(c.RedisAddr), MasterName: c.RedisMaster,
		Password: c.RedisPassword, TLS: c.RedisTLS}
}

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
// (the process's own, see Main.Provider) and when none is named; an error
// when the name is unknown or its settings do not hold.
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

// RequireProvider refuses to run refunds without a provider chosen
// explicitly. A worker that defaulted to the sandbox in production would
// mark every late payment REFUNDED while no money went back.
func (c *Config) RequireProvider() error {
	if c.PaymentProvider == "" {
		return fmt.Errorf("refusing to start without SECKILL_PAYMENT_PROVIDER: refunds need a payment provider; "+
			"set SECKILL_PAYMENT_PROVIDER=%s explicitly to use the in-memory sandbox (dev and tests only: it moves no money)", SandboxProvider)
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

// parseProxies validates SECKILL_TRUSTED_PROXIES and SECKILL_PROXY_HEADER
// together: a bad entry, or one without the other, stops the command with
// the reason, before it connects to anything.
func (c *Config) parseProxies() error {
	trusted, err := api.ParseTrustedProxies(c.TrustedProxies)
	if err != nil {
		return fmt.Errorf("SECKILL_TRUSTED_PROXIES: %w", err)
	}
	if err := api.CheckProxies(c.ProxyHeader, trusted); err != nil {
		return err
	}
	c.trusted = trusted
	return nil
}

// RequireSecrets names every missing secret, so an operator fixes them in one go.
func (c *Config) RequireSecrets(names ...string) error {
	vals := map[string]string{
		"SECKILL_JWT_SECRET": string(c.SigningJWTSecret()), "SECKILL_WEBHOOK_SECRET": string(c.SigningWebhookSecret()), "SECKILL_ADMIN_TOKEN": c.AdminToken,
	}
	var missing []string
	for _, n := range names {
		if vals[n] == "" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("refusing to start without %v (set them in the environment; `seckill dev` makes its own)", missing)
	}
	return nil
}

// APIBase is the URL this machine reaches the API at.
func (c *Config) APIBase() string { return LocalURL(c.HTTPAddr) }

// LocalURL is the URL this machine reaches a listen address (":8080") at.
func LocalURL(addr string) string {
	if addr != "" && addr[0] != ':' {
		return "http://" + addr
	}
	return "http://127.0.0.1" + addr
}

// Logger is the process's JSON logger at SECKILL_LOG_LEVEL.
func (c *Config) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel}))
}
