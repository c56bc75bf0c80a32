package app

import (
	"cmp"
	"crypto/tls"
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
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/clientip"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/risk"
	"github.com/seckill/seckill/sessions"
	"github.com/seckill/seckill/temporal/starter"
	"github.com/seckill/seckill/tracing"
)

// Config is read from the environment; the defaults serve a local machine.
// Defaults that are facts of another package have no envDefault tag: they
// come from that package (defaultConfig), so each is defined once.
type Config struct {
	MySQLDSN string `env:"SECKILL_MYSQL_DSN" envDefault:"root:@tcp(127.0.0.1:3306)/seckill?parseTime=true" secret:"true"`
	// MySQLSlow logs the statements slower than this at warn; 0: none.
	MySQLSlow time.Duration `env:"SECKILL_MYSQL_SLOW" envDefault:"200ms"`
	// RedisAddr is one address (a single node), a comma-separated list
	// (Redis Cluster seeds) or, with RedisMaster, the Sentinels' addresses:
	// go-redis's universal client rules (see Redis).
	RedisAddr     string `env:"SECKILL_REDIS_ADDR" envDefault:"127.0.0.1:6379"`
	RedisMaster   string `env:"SECKILL_REDIS_MASTER"`
	RedisPassword string `env:"SECKILL_REDIS_PASSWORD" secret:"true"`
	RedisTLS      bool   `env:"SECKILL_REDIS_TLS"`
	RedisPrefix   string `env:"SECKILL_REDIS_PREFIX" envDefault:"seckill"`
	// The private CA that signed Redis's and MySQL's certificates, and the
	// client certificate and key they ask for (Redis's tls-auth-clients,
	// MySQL's REQUIRE X509). Any of them turns TLS on for that store.
	RedisCAFile   string `env:"SECKILL_REDIS_CA_FILE"`
	RedisCertFile string `env:"SECKILL_REDIS_CERT_FILE"`
	RedisKeyFile  string `env:"SECKILL_REDIS_KEY_FILE"`
	MySQLCAFile   string `env:"SECKILL_MYSQL_CA_FILE"`
	MySQLCertFile string `env:"SECKILL_MYSQL_CERT_FILE"`
	MySQLKeyFile  string `env:"SECKILL_MYSQL_KEY_FILE"`
	// TemporalAddr and TemporalNamespace are the SECKILL_ aliases of
	// TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE; after LoadConfig they hold
	// what the client dials (see Temporal).
	TemporalAddr      string        `env:"SECKILL_TEMPORAL_ADDR"`
	TemporalNamespace string        `env:"SECKILL_TEMPORAL_NAMESPACE"`
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
	// LimitAdminFails is how many failed admin credentials one client
	// address may send a minute (each API process), before the admin API
	// answers it 429 without looking at its credential; 0 turns it off.
	LimitAdminFails int `env:"SECKILL_LIMIT_ADMIN_FAILS" envDefault:"10"`
	// The risk check before admission (admission.RiskConfig): the shop's risk
	// service, its request signing key, its deadline, what no answer
	// means ("open": go on, "closed": 503), how long a verdict holds per
	// shopper, and the User-Agent rules (comma-separated substrings, "-"
	// for none at all).
	RiskURL           string        `env:"SECKILL_RISK_URL"`
	RiskSecret        string        `env:"SECKILL_RISK_SECRET" secret:"true"`
	RiskTimeout       time.Duration `env:"SECKILL_RISK_TIMEOUT" envDefault:"10ms"`
	RiskFail          string        `env:"SECKILL_RISK_FAIL" envDefault:"open"`
	RiskCache         time.Duration `env:"SECKILL_RISK_CACHE" envDefault:"30s"`
	RiskUserAgentDeny string        `env:"SECKILL_RISK_UA_DENY"`
	ProxyHeader       string        `env:"SECKILL_PROXY_HEADER"`
	TrustedProxies    string        `env:"SECKILL_TRUSTED_PROXIES"`
	PaymentProvider   string        `env:"SECKILL_PAYMENT_PROVIDER"`
	// PublicURL is the API as shoppers' browsers reach it (the balancer,
	// the ingress): the sandbox links its checkout pages there. Empty:
	// this process's own address, right only when browsers reach it.
	PublicURL string `env:"SECKILL_PUBLIC_URL"`
	// PaymentURL, PaymentRefundURL and PaymentProviderSecret configure the
	// http provider (package paymenthttp): the adapter's payments API,
	// where refunds are sent (PaymentURL + "/refunds" when empty), and the
	// key that signs every request.
	PaymentURL            string `env:"SECKILL_PAYMENT_URL"`
	PaymentRefundURL      string `env:"SECKILL_PAYMENT_REFUND_URL"`
	PaymentProviderSecret string `env:"SECKILL_PAYMENT_PROVIDER_SECRET" secret:"true"`
	// StripeSecretKey, StripeAPIURL and StripeCheckoutURL configure the
	// stripe provider (package paymentstripe): the account's secret key,
	// another API base URL (stripe-mock in tests), and the shop's own
	// payment page ({payment_id} and {client_secret} filled in).
	// StripeWebhookSecret verifies the events Stripe sends the API.
	StripeSecretKey     string `env:"SECKILL_STRIPE_SECRET_KEY" secret:"true"`
	StripeWebhookSecret string `env:"SECKILL_STRIPE_WEBHOOK_SECRET" secret:"true"`
	StripeAPIURL        string `env:"SECKILL_STRIPE_API_URL"`
	StripeCheckoutURL   string `env:"SECKILL_STRIPE_CHECKOUT_URL"`
	// EventsURL receives the order events as signed webhooks (signed
	// with EventsSecret, which it requires), each parked after
	// EventsAttempts failed deliveries; unset: events are recorded and
	// listed in the feed, not sent, and after EventsUnsent they no longer
	// wait for a URL (0: however long).
	EventsURL      string        `env:"SECKILL_EVENTS_URL"`
	EventsSecret   string        `env:"SECKILL_EVENTS_SECRET" secret:"true"`
	EventsAttempts int           `env:"SECKILL_EVENTS_ATTEMPTS"` // seckill.DefaultEventAttempts
	EventsUnsent   time.Duration `env:"SECKILL_EVENTS_UNSENT_RETENTION" envDefault:"72h"`
	// EventsLost: a draw sale's end records a registration.lost event per
	// registrant who bought nothing (a million for a million registrants).
	EventsLost     bool          `env:"SECKILL_EVENTS_LOST" envDefault:"false"`
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
	JWTSecret     string `env:"SECKILL_JWT_SECRET" secret:"true"`
	WebhookSecret string `env:"SECKILL_WEBHOOK_SECRET" secret:"true"`
	// DrawKey seals draw seeds at rest (64 hex digits): the worker's
	// alone; `seckill worker` refuses to start without it, the API never
	// needs it.
	DrawKey string `env:"SECKILL_DRAW_KEY" secret:"true"`
	// AdminToken is the bootstrap admin; operators are named tokens
	// (seckill operators) or the identity provider's (AdminJWKSURL).
	AdminToken string `env:"SECKILL_ADMIN_TOKEN" secret:"true"`
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
	OperatorToken string     `env:"SECKILL_OPERATOR_TOKEN" secret:"true"`
	LogLevel      slog.Level `env:"SECKILL_LOG_LEVEL" envDefault:"INFO"`
	Web

	// trusted is TrustedProxies parsed.
	trusted []netip.Prefix
	// temporal is Temporal's client configuration (see Temporal).
	temporal client.Options
	// redisTLS is how Redis is dialled with TLS (nil: plaintext).
	redisTLS *tls.Config
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
	e, err := readEnviron(os.Environ())
	if err != nil {
		return nil, err
	}
	c := defaultConfig()
	if err := env.ParseWithOptions(&c, env.Options{Environment: e}); err != nil {
		return nil, err
	}
	if c.temporal, err = temporalOptions(e); err != nil {
		return nil, err
	}
	c.TemporalAddr, c.TemporalNamespace = c.temporal.HostPort, c.temporal.Namespace
	if c.PayTimeout <= 0 || c.SweepGrace <= 0 || c.PayGrace <= 0 || c.RelayMinAge <= 0 || c.RetainAfter <= 0 || c.PreheatLead <= 0 {
		return nil, errors.New("SECKILL_PAY_TIMEOUT, SECKILL_SWEEP_GRACE, SECKILL_PAY_GRACE, SECKILL_RELAY_MIN_AGE, SECKILL_PREHEAT_LEAD and SECKILL_RETAIN_AFTER must be positive durations")
	}
	if err := sessions.CheckCurrency(c.Currency); err != nil {
		return nil, fmt.Errorf("SECKILL_CURRENCY: %s", seckill.ErrorMessage(err))
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
	if c.PublicURL != "" && !absoluteHTTP(c.PublicURL) {
		return nil, fmt.Errorf("SECKILL_PUBLIC_URL=%q must be an absolute http or https URL (the API as shoppers reach it)", c.PublicURL)
	}
	if c.ObserveEvery <= 0 {
		return nil, errors.New("SECKILL_OBSERVE_EVERY must be a positive duration")
	}
	if c.DrainDelay < 0 {
		return nil, errors.New("SECKILL_DRAIN_DELAY must be 0 (stop at once) or a positive duration")
	}
	if c.MySQLSlow < 0 {
		return nil, errors.New("SECKILL_MYSQL_SLOW must be 0 (no slow-query log) or a positive duration")
	}
	if err := c.checkRisk(); err != nil {
		return nil, err
	}
	if c.LimitGlobalRPS < 0 || c.LimitUserRPS < 0 || c.LimitIPRPS < 0 || c.LimitReadRPS < 0 || c.LimitDeviceRPS < 0 {
		return nil, errors.New("SECKILL_LIMIT_*_RPS must be 0 (off) or a positive number of requests per second")
	}
	if c.LimitAdminFails < 0 {
		return nil, errors.New("SECKILL_LIMIT_ADMIN_FAILS must be 0 (off) or a positive number of failed admin credentials a minute")
	}
	if len(redis.ParseAddrs(c.RedisAddr)) == 0 {
		return nil, errors.New("SECKILL_REDIS_ADDR must name at least one host:port")
	}
	if err := c.parseProxies(); err != nil {
		return nil, err
	}
	if err := c.loadTLS(); err != nil {
		return nil, err
	}
	if err := c.checkIdentity(); err != nil {
		return nil, err
	}
	if _, err := c.drawKey(); err != nil {
		return nil, err
	}
	if err := c.checkWeb(); err != nil {
		return nil, err
	}
	return &c, nil
}

// drawKey is SECKILL_DRAW_KEY parsed; nil when unset.
func (c *Config) drawKey() (*seckill.DrawKey, error) {
	if c.DrawKey == "" {
		return nil, nil
	}
	return seckill.ParseDrawKey(c.DrawKey)
}

// RequireDrawKey refuses to run a worker that could not seal or open a
// draw's seed: a sale's registration would never open, its draw never
// run.
func (c *Config) RequireDrawKey() error {
	if c.DrawKey == "" {
		return errors.New("refusing to start the worker without SECKILL_DRAW_KEY: it seals draw seeds at rest and opens them at the draw " +
			"(64 hex digits, e.g. openssl rand -hex 32; keep it only where the worker runs, the same in every worker)")
	}
	_, err := c.drawKey()
	return err
}

// checkEvents validates SECKILL_EVENTS_*: an absolute http(s) URL, never
// without its secret (a receiver could not tell our events from anyone's),
// and a positive number of attempts.
func (c *Config) checkEvents() error {
	if c.EventsAttempts <= 0 {
		return errors.New("SECKILL_EVENTS_ATTEMPTS must be a positive number of delivery attempts")
	}
	if c.EventsUnsent < 0 {
		return errors.New("SECKILL_EVENTS_UNSENT_RETENTION must not be negative (0 keeps unsent events for a later URL)")
	}
	if c.EventsURL == "" {
		return nil
	}
	if !absoluteHTTP(c.EventsURL) {
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
	if !absoluteHTTP(c.RiskURL) {
		return fmt.Errorf("SECKILL_RISK_URL=%q must be an absolute http or https URL", c.RiskURL)
	}
	return nil
}

// Risk is the API's risk check as SECKILL_RISK_* say.
func (c *Config) Risk() admission.RiskConfig {
	r := admission.RiskConfig{Timeout: c.RiskTimeout, FailClosed: c.RiskFail == "closed", CacheTTL: c.RiskCache}
	for _, s := range strings.Split(c.RiskUserAgentDeny, ",") {
		if s = strings.TrimSpace(s); s != "" {
			r.UserAgentDeny = append(r.UserAgentDeny, s)
		}
	}
	if c.RiskURL != "" {
		r.Checker = &risk.Client{URL: c.RiskURL, Secret: []byte(c.RiskSecret), HTTP: &http.Client{
			Transport: tracing.Transport(&http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute})}}
	}
	return r
}

// Redis is where Redis is, as SECKILL_REDIS_* say: one address is a single
// node, several a Redis Cluster's seeds, and with SECKILL_REDIS_MASTER they
// are Sentinels.
func (c *Config) Redis() redis.Server {
	return redis.Server{Addrs: redis.ParseAddrs(c.RedisAddr), MasterName: c.RedisMaster,
		Password: c.RedisPassword, TLS: c.redisTLS}
}

// parseProxies validates SECKILL_TRUSTED_PROXIES and SECKILL_PROXY_HEADER
// together: a bad entry, or one without the other, stops the command with
// the reason, before it connects to anything.
func (c *Config) parseProxies() error {
	trusted, err := clientip.ParseProxies(c.TrustedProxies)
	if err != nil {
		return fmt.Errorf("SECKILL_TRUSTED_PROXIES: %w", err)
	}
	if err := clientip.CheckProxies(c.ProxyHeader, trusted); err != nil {
		return err
	}
	c.trusted = trusted
	return nil
}

// MinSecretBytes is the shortest SECKILL_JWT_SECRET (each of a rotation)
// and SECKILL_ADMIN_TOKEN accepted: 256 bits, out of reach of guessing,
// offline too (a shopper's token is an HMAC of the secret anyone can try
// keys against).
const MinSecretBytes = 32

// BootstrapOff is the SECKILL_ADMIN_TOKEN that switches the bootstrap
// admin off, once named operators or the identity provider let the
// operators in: set, so that forgetting the variable is still refused.
const BootstrapOff = "off"

// BootstrapToken is the bootstrap admin's token: "" when switched off.
func (c *Config) BootstrapToken() string {
	if c.AdminToken == BootstrapOff {
		return ""
	}
	return c.AdminToken
}

// RequireSecrets names every missing secret, so an operator fixes them in
// one go, then every one too short to be safe (never the secrets).
func (c *Config) RequireSecrets(names ...string) error {
	vals := map[string][][]byte{"SECKILL_JWT_SECRET": c.JWTSecrets(), "SECKILL_WEBHOOK_SECRET": c.WebhookSecrets()}
	if c.AdminToken != "" {
		vals["SECKILL_ADMIN_TOKEN"] = [][]byte{[]byte(c.AdminToken)} // one token, commas and all
	}
	var missing, short []string
	for _, n := range names {
		if len(vals[n]) == 0 {
			missing = append(missing, n)
			continue
		}
		if n == "SECKILL_WEBHOOK_SECRET" || c.AdminToken == BootstrapOff && n == "SECKILL_ADMIN_TOKEN" {
			continue // the provider's choice; the bootstrap switched off
		}
		for i, v := range vals[n] {
			if len(v) < MinSecretBytes {
				short = append(short, fmt.Sprintf("%s (its secret %d has %d bytes)", n, i+1, len(v)))
			}
		}
	}
	if len(missing) > 0 {
		them := "them"
		if len(missing) == 1 {
			them = "it"
		}
		return fmt.Errorf("refusing to start without %s (set %s in the environment; `seckill dev` makes its own)", strings.Join(missing, ", "), them)
	}
	if len(short) > 0 {
		return fmt.Errorf("refusing to start: %s must be at least %d bytes each, e.g. `openssl rand -hex 32` (SECKILL_ADMIN_TOKEN may be %q once named operators exist: no bootstrap admin)",
			strings.Join(short, ", "), MinSecretBytes, BootstrapOff)
	}
	return nil
}

// APIBase is the URL this machine reaches the API at.
func (c *Config) APIBase() string { return LocalURL(c.HTTPAddr) }

// PublicBase is the URL shoppers' browsers reach the API at
// (SECKILL_PUBLIC_URL, else APIBase).
func (c *Config) PublicBase() string { return cmp.Or(c.PublicURL, c.APIBase()) }

// absoluteHTTP reports whether raw is an absolute http or https URL: what
// every URL setting must be.
func absoluteHTTP(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// LocalURL is the URL this machine reaches a listen address (":8080") at.
func LocalURL(addr string) string {
	if addr != "" && addr[0] != ':' {
		return "http://" + addr
	}
	return "http://127.0.0.1" + addr
}

// Logger is the process's JSON logger at SECKILL_LOG_LEVEL.
func (c *Config) Logger() *slog.Logger {
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: c.LogLevel})))
}
