package app

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal/starter"
)

// api and worker refuse to start without their secrets, naming each one.
func TestRequireSecretsNamesWhatIsMissing(t *testing.T) {
	t.Setenv("SECKILL_JWT_SECRET", strings.Repeat("j", 32))
	t.Setenv("SECKILL_WEBHOOK_SECRET", "")
	t.Setenv("SECKILL_ADMIN_TOKEN", "")
	c, err := LoadConfig()
	require.NoError(t, err)
	err = c.RequireSecrets("SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN")
	require.ErrorContains(t, err, "refusing to start without SECKILL_WEBHOOK_SECRET, SECKILL_ADMIN_TOKEN (set them")
	require.NotContains(t, err.Error(), "SECKILL_JWT_SECRET")
	require.NoError(t, c.RequireSecrets("SECKILL_JWT_SECRET"))
	require.ErrorContains(t, c.RequireSecrets("SECKILL_ADMIN_TOKEN"), "without SECKILL_ADMIN_TOKEN (set it in the environment")
}

// Each secret of SECKILL_JWT_SECRET and SECKILL_ADMIN_TOKEN has at least
// 32 bytes, or api and worker refuse to start, naming the variable and
// never repeating the secret. SECKILL_ADMIN_TOKEN=off switches the
// bootstrap admin off (no credential is it: named operators and the
// identity provider remain); unset it is still refused.
func TestSecretsAreLongEnoughAndTheBootstrapCanBeOff(t *testing.T) {
	long := strings.Repeat("k", 32)
	t.Setenv("SECKILL_WEBHOOK_SECRET", "w")
	for _, tc := range []struct{ jwt, admin, refused string }{
		{"short-jwt-secret", long, "SECKILL_JWT_SECRET"},
		{long + ",short-old-jwt", long, "SECKILL_JWT_SECRET"},
		{long, "short-admin-token", "SECKILL_ADMIN_TOKEN"},
		{long, "", "SECKILL_ADMIN_TOKEN"},
		{long, long, ""},
		{long + "," + long + "x", "off", ""},
	} {
		t.Setenv("SECKILL_JWT_SECRET", tc.jwt)
		t.Setenv("SECKILL_ADMIN_TOKEN", tc.admin)
		c, err := LoadConfig()
		require.NoError(t, err)
		err = c.RequireSecrets("SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN")
		if tc.refused == "" {
			require.NoError(t, err, "%+v", tc)
			continue
		}
		require.ErrorContains(t, err, tc.refused, "%+v", tc)
		for _, secret := range strings.Split(tc.jwt+","+tc.admin, ",") {
			if secret != "" {
				require.NotContains(t, err.Error(), secret, "the error repeats a secret")
			}
		}
	}

	t.Setenv("SECKILL_PAYMENT_PROVIDER", SandboxProvider) // the API opens checkouts
	c, err := LoadConfig()                                // SECKILL_ADMIN_TOKEN=off
	require.NoError(t, err)
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	m := &Main{Config: c, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	require.Empty(t, m.Operators().Bootstrap, "no bootstrap admin")
	srv, err := m.APIServer(false)
	require.NoError(t, err)
	req := httptest.NewRequest("GET", "/admin/v1/events", nil)
	req.Header.Set("Authorization", "Bearer off")
	resp, err := srv.App().Test(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "off is no credential")
}

// Configuration defaults follow the design's table; bad values are refused.
func TestConfigDefaultsAndValidation(t *testing.T) {
	for _, v := range []string{"SECKILL_MYSQL_DSN", "SECKILL_REDIS_PREFIX", "SECKILL_TASK_QUEUE",
		"SECKILL_HTTP_ADDR", "SECKILL_PAY_TIMEOUT", "SECKILL_START_TIMEOUT", "SECKILL_LIMIT_USER_RPS"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "root:@tcp(127.0.0.1:3306)/seckill?parseTime=true", c.MySQLDSN)
	require.Equal(t, "seckill", c.RedisPrefix)
	require.Equal(t, "seckill-orders", c.TaskQueue)
	require.Equal(t, ":8080", c.HTTPAddr)
	require.Equal(t, "15m0s", c.PayTimeout.String())
	require.Zero(t, c.StartTimeout, "deprecated: no default")
	t.Setenv("SECKILL_START_TIMEOUT", "300ms")
	_, err = LoadConfig()
	require.NoError(t, err, "an old deployment that still sets SECKILL_START_TIMEOUT starts")
	t.Setenv("SECKILL_LIMIT_USER_RPS", "-1")
	_, err = LoadConfig()
	require.Error(t, err)
	t.Setenv("SECKILL_LIMIT_USER_RPS", "")
	os.Unsetenv("SECKILL_LIMIT_USER_RPS")
	for _, bad := range []string{"uds", "USD", "xxx"} {
		t.Setenv("SECKILL_CURRENCY", bad)
		_, err = LoadConfig()
		require.ErrorContains(t, err, "SECKILL_CURRENCY", "%q is no currency to price sales in", bad)
	}
	t.Setenv("SECKILL_CURRENCY", "jpy")
	c, err = LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "jpy", c.Currency)
	t.Setenv("SECKILL_LIMIT_USER_RPS", "lots")
	_, err = LoadConfig()
	require.Error(t, err)
}

// SECKILL_STARTER_YIELD: 3 s unless set; 0 is off (the starter's own zero
// value would mean its default), a negative duration is a mistake.
func TestStarterYieldConfig(t *testing.T) {
	for _, v := range []string{"SECKILL_STARTER_YIELD", "SECKILL_LIMIT_USER_RPS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, starter.DefaultYield, c.StarterYield)
	m := &Main{Config: c, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	require.Equal(t, starter.DefaultYield, m.StarterConfig().Yield)

	t.Setenv("SECKILL_STARTER_YIELD", "0")
	c, err = LoadConfig()
	require.NoError(t, err)
	m.Config = c
	require.Negative(t, m.StarterConfig().Yield, "0 turns the yield off")

	t.Setenv("SECKILL_STARTER_YIELD", "-1s")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_STARTER_YIELD")
}

// SECKILL_REDIS_ADDR and its companions follow go-redis's universal
// rules: one address is a single node, a comma-separated list a Redis
// Cluster's seeds, and with SECKILL_REDIS_MASTER the Sentinels.
func TestRedisConfig(t *testing.T) {
	for _, v := range []string{"SECKILL_REDIS_ADDR", "SECKILL_REDIS_MASTER", "SECKILL_REDIS_PASSWORD", "SECKILL_REDIS_TLS"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, redis.Server{Addrs: []string{"127.0.0.1:6379"}}, c.Redis(), "the default: one local node")
	require.Nil(t, c.Redis().Options().TLSConfig)

	t.Setenv("SECKILL_REDIS_ADDR", "10.0.0.1:7000, 10.0.0.2:7000,,10.0.0.3:7000 ")
	t.Setenv("SECKILL_REDIS_PASSWORD", "pw")
	t.Setenv("SECKILL_REDIS_TLS", "true")
	c, err = LoadConfig()
	require.NoError(t, err)
	s := c.Redis()
	require.Equal(t, []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}, s.Addrs)
	require.Equal(t, "pw", s.Password)
	o := s.Options()
	require.Equal(t, "pw", o.Password)
	require.Empty(t, o.SentinelPassword, "the password is the data nodes'")
	require.NotNil(t, o.TLSConfig)
	require.Nil(t, o.TLSConfig.RootCAs, "the system roots")
	rdb := redis.NewAdmissionClient(s)
	t.Cleanup(func() { rdb.Close() })
	cluster, ok := rdb.(*goredis.ClusterClient)
	require.True(t, ok, "a list of seeds is a Redis Cluster, got %T", rdb)
	require.Equal(t, 256, cluster.Options().PoolSize, "the admission pool, per node")
	require.Equal(t, 500*time.Millisecond, cluster.Options().ReadTimeout)
	require.LessOrEqual(t, cluster.Options().MaxRetries, 0, "never re-sent by the client")

	t.Setenv("SECKILL_REDIS_MASTER", "seckill")
	t.Setenv("SECKILL_REDIS_TLS", "")
	c, err = LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "seckill", c.Redis().MasterName)
	rdb = redis.NewAdmissionClient(c.Redis())
	t.Cleanup(func() { rdb.Close() })
	require.IsType(t, &goredis.Client{}, rdb, "Sentinel failover: a client that asks the Sentinels for the master")

	for _, bad := range []string{" , ", "x"} {
		t.Setenv("SECKILL_REDIS_ADDR", bad)
		if bad == "x" {
			t.Setenv("SECKILL_REDIS_TLS", "maybe")
		}
		_, err = LoadConfig()
		require.Error(t, err, "SECKILL_REDIS_ADDR=%q", bad)
	}
}

// The proxy settings are checked before anything connects: a bad entry,
// or one setting without the other, stops the command with the reason.
func TestProxyConfig(t *testing.T) {
	for _, c := range []struct {
		header, trusted, wantErr string
	}{
		{"", "", ""},
		{"X-Forwarded-For", "10.0.0.0/8, 192.168.0.1", ""},
		{"X-Forwarded-For", "10.0.0.0/33", `SECKILL_TRUSTED_PROXIES: trusted proxy "10.0.0.0/33" is not a CIDR`},
		{"X-Forwarded-For", "10.0.0.0/8,lb.internal", `"lb.internal" is not a CIDR`},
		{"X-Forwarded-For", "", "SECKILL_TRUSTED_PROXIES is empty"},
		{"", "10.0.0.0/8", "SECKILL_PROXY_HEADER is not"},
	} {
		t.Setenv("SECKILL_PROXY_HEADER", c.header)
		t.Setenv("SECKILL_TRUSTED_PROXIES", c.trusted)
		cfg, err := LoadConfig()
		if c.wantErr != "" {
			require.ErrorContains(t, err, c.wantErr, "%+v", c)
			continue
		}
		require.NoError(t, err, "%+v", c)
		if c.trusted != "" {
			require.Len(t, cfg.trusted, 2)
		}
	}
	t.Setenv("SECKILL_TRUSTED_PROXIES", "")
	t.Setenv("SECKILL_LIMIT_READ_RPS", "")
	os.Unsetenv("SECKILL_LIMIT_READ_RPS")
	cfg, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, 100, cfg.LimitReadRPS)
	t.Setenv("SECKILL_LIMIT_READ_RPS", "-1")
	_, err = LoadConfig()
	require.Error(t, err)
}

// `seckill api` never mounts the dev-only endpoints (a token for anyone,
// sandbox payment); `seckill dev` does. Nothing here connects: the routes
// are decided when the server is built.
func TestDevEndpointsOnlyInDev(t *testing.T) {
	c := &Config{JWTSecret: "j", WebhookSecret: "w", AdminToken: "a", RedisPrefix: "x", TaskQueue: "q", PaymentProvider: SandboxProvider}
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	m := &Main{Config: c, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, dev := range []bool{false, true} {
		srv, err := m.APIServer(dev)
		require.NoError(t, err)
		req := httptest.NewRequest("POST", "/dev/v1/token", strings.NewReader(`{"user_id":1}`))
		resp, err := srv.App().Test(req)
		require.NoError(t, err)
		want := http.StatusNotFound
		if dev {
			want = http.StatusOK
		}
		require.Equal(t, want, resp.StatusCode, "dev=%v", dev)
	}
}

// Failed admin credentials are limited per client address unless
// SECKILL_LIMIT_ADMIN_FAILS=0 says otherwise; a negative budget is refused.
func TestAdminFailLimitIsOnByDefault(t *testing.T) {
	t.Setenv("SECKILL_LIMIT_ADMIN_FAILS", "")
	os.Unsetenv("SECKILL_LIMIT_ADMIN_FAILS")
	c, err := LoadConfig()
	require.NoError(t, err)
	m := &Main{Config: c, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	require.Equal(t, 10, m.APIConfig(false).Limits.AdminFails)
	t.Setenv("SECKILL_LIMIT_ADMIN_FAILS", "0")
	c, err = LoadConfig()
	require.NoError(t, err)
	require.Zero(t, c.LimitAdminFails, "off")
	t.Setenv("SECKILL_LIMIT_ADMIN_FAILS", "-1")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_LIMIT_ADMIN_FAILS")
}

// A process that runs refunds on the sandbox says so loudly at start.
func TestSandboxProviderWarnsAtStart(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	(&Config{}).WarnProvider(log)
	require.Empty(t, buf.String(), "no provider, no sandbox warning (the process refused to start)")
	(&Config{PaymentProvider: "sandbox"}).WarnProvider(log)
	require.Contains(t, buf.String(), "level=WARN")
	require.Contains(t, buf.String(), "SANDBOX PAYMENT PROVIDER")
}

// Every default has one definition: the binary's (an envDefault tag, or
// the owning package's constant through defaultConfig). The README's
// configuration table and docker-compose.yml's fallbacks spell them again,
// so they are checked against what LoadConfig yields with nothing set.
func TestDefaultsAreSpelledAsTheBinaryHasThem(t *testing.T) {
	fields := map[string]reflect.Value{} // env name → field, of the defaults
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		if name := typ.Field(i).Tag.Get("env"); name != "" {
			t.Setenv(name, "") // restored after the test
			os.Unsetenv(name)
		}
	}
	c, err := LoadConfig()
	require.NoError(t, err)
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < typ.NumField(); i++ {
		if name := typ.Field(i).Tag.Get("env"); name != "" {
			fields[name] = v.Field(i)
		}
	}
	same := func(where, name, spelled string) {
		t.Helper()
		f, ok := fields[name]
		require.True(t, ok, "%s names %s, which the binary does not read", where, name)
		switch x := f.Interface().(type) {
		case time.Duration:
			d, err := time.ParseDuration(spelled)
			require.NoError(t, err, "%s: %s default %q", where, name, spelled)
			require.Equal(t, x, d, "%s: %s default", where, name)
		default:
			require.Equal(t, fmt.Sprint(x), spelled, "%s: %s default", where, name)
		}
	}

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	rows := regexp.MustCompile("(?m)^\\| `(SECKILL_[A-Z0-9_]+)` \\| `([^`]*)` \\|").FindAllStringSubmatch(string(readme), -1)
	require.GreaterOrEqual(t, len(rows), 15, "the README's configuration table")
	for _, r := range rows {
		same("README.md", r[1], r[2])
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	require.NoError(t, err)
	for _, m := range regexp.MustCompile(`\$\{(SECKILL_[A-Z0-9_]+):-([^}]*)\}`).FindAllStringSubmatch(string(compose), -1) {
		same("docker-compose.yml", m[1], m[2])
	}
	require.Equal(t, seckill.DefaultPayTimeout, c.PayTimeout)
	require.Equal(t, seckill.DefaultSweepGrace, c.SweepGrace)
	require.Equal(t, relay.DefaultMinAge, c.RelayMinAge)
}

// The payment provider is chosen by configuration: an unknown name or an
// http provider without its URL or secret stops the command at start,
// naming what is wrong; a complete one is what refunds go to.
func TestPaymentProviderByConfiguration(t *testing.T) {
	t.Setenv("SECKILL_PAYMENT_PROVIDER", "paypal")
	_, err := LoadConfig()
	require.ErrorContains(t, err, `"sandbox"`)
	require.ErrorContains(t, err, `"http"`)
	require.ErrorContains(t, err, `"stripe"`)
	t.Setenv("SECKILL_PAYMENT_PROVIDER", HTTPProvider)
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_PAYMENT_URL")
	t.Setenv("SECKILL_PAYMENT_URL", "https://payments.internal/v1")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_PAYMENT_PROVIDER_SECRET")
	t.Setenv("SECKILL_PAYMENT_PROVIDER_SECRET", "0123456789abcdef0123")
	c := requireProvider(t, "*paymenthttp.Provider")
	m := &Main{Config: c}
	c.PaymentProvider = SandboxProvider
	require.Equal(t, "*sandbox.Provider", fmt.Sprintf("%T", m.PaymentProvider()))
}

// SECKILL_PAYMENT_PROVIDER=stripe needs its secret key at start (never
// repeated in the error); the API also needs the webhook's signing secret,
// and only then has the Stripe webhook route. Nothing here connects.
func TestStripeProviderByConfiguration(t *testing.T) {
	for _, v := range []string{"SECKILL_STRIPE_SECRET_KEY", "SECKILL_STRIPE_WEBHOOK_SECRET", "SECKILL_STRIPE_API_URL", "SECKILL_STRIPE_CHECKOUT_URL"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("SECKILL_PAYMENT_PROVIDER", StripeProvider)
	_, err := LoadConfig()
	require.ErrorContains(t, err, "SECKILL_STRIPE_SECRET_KEY is required")
	t.Setenv("SECKILL_STRIPE_SECRET_KEY", "pk_live_publishable123")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "publishable key")
	require.NotContains(t, err.Error(), "pk_live_publishable123")
	t.Setenv("SECKILL_STRIPE_SECRET_KEY", "sk_test_123")
	t.Setenv("SECKILL_STRIPE_API_URL", "127.0.0.1:12111")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_STRIPE_API_URL")
	t.Setenv("SECKILL_STRIPE_API_URL", "http://127.0.0.1:12111")
	t.Setenv("SECKILL_STRIPE_CHECKOUT_URL", "https://shop.example/pay?pi={payment_id}&cs={client_secret}")
	c := requireProvider(t, "*paymentstripe.Provider")

	c.JWTSecret, c.WebhookSecret, c.AdminToken = "j", "w", "a"
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	m := &Main{Config: c, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = m.APIServer(false)
	require.ErrorContains(t, err, "SECKILL_STRIPE_WEBHOOK_SECRET", "the API cannot verify Stripe's events without it")

	route := func(provider string) int {
		t.Helper()
		c.PaymentProvider, c.StripeWebhookSecret = provider, "whsec_test"
		srv, err := m.APIServer(false)
		require.NoError(t, err)
		resp, err := srv.App().Test(httptest.NewRequest("POST", "/api/v1/payments/stripe/webhook", strings.NewReader("{}")))
		require.NoError(t, err)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusUnauthorized, route(StripeProvider), "served: an unsigned event is refused")
	require.Equal(t, http.StatusNotFound, route(SandboxProvider), "no Stripe route without Stripe")
}

// requireProvider loads the configuration and requires that it selects a
// payment provider of type want (as %T prints it).
func requireProvider(t *testing.T, want string) *Config {
	t.Helper()
	c, err := LoadConfig()
	require.NoError(t, err)
	require.NoError(t, c.RequireProvider())
	require.Equal(t, want, fmt.Sprintf("%T", (&Main{Config: c}).PaymentProvider()))
	return c
}

// SECKILL_EVENTS_*: unset, events are only recorded and listed (20
// attempts by default); a URL needs its secret and must be an absolute
// http(s) URL; the attempts must be positive. The worker's relay takes
// them as configured.
func TestEventsConfig(t *testing.T) {
	for _, v := range []string{"SECKILL_EVENTS_URL", "SECKILL_EVENTS_SECRET", "SECKILL_EVENTS_ATTEMPTS", "SECKILL_LIMIT_USER_RPS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Empty(t, c.EventsURL)
	require.Equal(t, 20, c.EventsAttempts)
	r := (&Main{Config: c}).EventsRelay()
	require.Empty(t, r.URL, "not sent, only sequenced")
	require.Equal(t, 20, r.Retry.Attempts)

	t.Setenv("SECKILL_EVENTS_URL", "https://fulfilment.example/hooks/seckill")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_EVENTS_SECRET", "a URL without a secret does not start")
	t.Setenv("SECKILL_EVENTS_SECRET", "s3cret")
	t.Setenv("SECKILL_EVENTS_ATTEMPTS", "5")
	c, err = LoadConfig()
	require.NoError(t, err)
	r = (&Main{Config: c}).EventsRelay()
	require.Equal(t, "https://fulfilment.example/hooks/seckill", r.URL)
	require.Equal(t, []byte("s3cret"), r.Secret)
	require.Equal(t, seckill.EventRetry(5), r.Retry)

	t.Setenv("SECKILL_EVENTS_ATTEMPTS", "0")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_EVENTS_ATTEMPTS")
	t.Setenv("SECKILL_EVENTS_ATTEMPTS", "")
	t.Setenv("SECKILL_EVENTS_URL", "fulfilment.example/hooks")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_EVENTS_URL")
}

// Every secret variable X also reads the file X_FILE names, its trailing
// newline dropped; both set is refused, naming the variable.
func TestSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := dir + "/" + name
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	for _, name := range secretNames() {
		t.Setenv(name, "")
		t.Setenv(name+"_FILE", "")
	}
	t.Setenv("SECKILL_JWT_SECRET_FILE", write("jwt", "from-a-file-0123456789-0123456789\n"))
	t.Setenv("SECKILL_MYSQL_DSN_FILE", write("dsn", "u:p@tcp(db:3306)/seckill?parseTime=true\r\n"))
	t.Setenv("TEMPORAL_API_KEY_FILE", write("key", "temporal-key\n"))
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "from-a-file-0123456789-0123456789", c.JWTSecret)
	require.Equal(t, "u:p@tcp(db:3306)/seckill?parseTime=true", c.MySQLDSN)
	require.NotNil(t, c.Temporal().Credentials, "TEMPORAL_API_KEY_FILE gives the client its API key")

	t.Setenv("SECKILL_JWT_SECRET", "from-the-environment")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "both SECKILL_JWT_SECRET and SECKILL_JWT_SECRET_FILE are set")

	t.Setenv("SECKILL_JWT_SECRET", "")
	t.Setenv("SECKILL_WEBHOOK_SECRET_FILE", dir+"/missing")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "SECKILL_WEBHOOK_SECRET_FILE")

	for _, name := range []string{"SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_SECRET", "SECKILL_ADMIN_TOKEN", "SECKILL_STRIPE_SECRET_KEY",
		"SECKILL_STRIPE_WEBHOOK_SECRET", "SECKILL_EVENTS_SECRET", "SECKILL_PAYMENT_PROVIDER_SECRET", "SECKILL_RISK_SECRET",
		"SECKILL_REDIS_PASSWORD", "SECKILL_OPERATOR_TOKEN", "SECKILL_DRAW_KEY", "TEMPORAL_API_KEY"} {
		require.Contains(t, secretNames(), name)
	}
}

// The Temporal client reads Temporal's own variables (the SDK's envconfig);
// SECKILL_TEMPORAL_ADDR and SECKILL_TEMPORAL_NAMESPACE stay as aliases,
// and Temporal's names win where both are set.
func TestTemporalClientConfiguration(t *testing.T) {
	for _, v := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS", "TEMPORAL_PROFILE",
		"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME",
		"SECKILL_TEMPORAL_ADDR", "SECKILL_TEMPORAL_NAMESPACE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("TEMPORAL_CONFIG_FILE", t.TempDir()+"/none.toml")
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7233", c.Temporal().HostPort)
	require.Equal(t, "default", c.Temporal().Namespace)
	require.Nil(t, c.Temporal().ConnectionOptions.TLS, "dev stays plaintext")

	t.Setenv("SECKILL_TEMPORAL_ADDR", "old:7233")
	t.Setenv("SECKILL_TEMPORAL_NAMESPACE", "old-ns")
	c, err = LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "old:7233", c.Temporal().HostPort)
	require.Equal(t, "old:7233", c.TemporalAddr)
	require.Equal(t, "old-ns", c.TemporalNamespace)

	t.Setenv("TEMPORAL_ADDRESS", "acme.a1b2c.tmprl.cloud:7233")
	t.Setenv("TEMPORAL_NAMESPACE", "acme.a1b2c")
	t.Setenv("TEMPORAL_TLS", "true")
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "acme.a1b2c.tmprl.cloud")
	c, err = LoadConfig()
	require.NoError(t, err)
	o := c.Temporal()
	require.Equal(t, "acme.a1b2c.tmprl.cloud:7233", o.HostPort)
	require.Equal(t, "acme.a1b2c", o.Namespace)
	require.NotNil(t, o.ConnectionOptions.TLS)
	require.Equal(t, "acme.a1b2c.tmprl.cloud", o.ConnectionOptions.TLS.ServerName)

	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", t.TempDir()+"/missing.pem")
	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", t.TempDir()+"/missing.key")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "temporal client configuration", "a bad certificate stops the process before it connects")

	t.Setenv("TEMPORAL_TLS_CLIENT_KEY_PATH", "")
	os.Unsetenv("TEMPORAL_TLS_CLIENT_KEY_PATH")
	t.Setenv("TEMPORAL_TLS_CLIENT_CERT_PATH", "")
	os.Unsetenv("TEMPORAL_TLS_CLIENT_CERT_PATH")
	t.Setenv("TEMPORAL_PROFILE", "prod")
	_, err = LoadConfig()
	require.ErrorContains(t, err, "prod", "a named profile that is not in the file is refused")
}

// TLS files are read at start: a key without its certificate, or a CA
// file without a certificate in it, stops the process naming the variable.
func TestStoreTLSFilesAreCheckedAtStart(t *testing.T) {
	notPEM := t.TempDir() + "/ca.pem"
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, c := range []struct{ env, value, says string }{
		{"SECKILL_REDIS_KEY_FILE", "/k.pem", "SECKILL_REDIS_CERT_FILE and SECKILL_REDIS_KEY_FILE go together"},
		{"SECKILL_MYSQL_CA_FILE", notPEM, "SECKILL_MYSQL_CA_FILE=" + notPEM + " holds no PEM certificate"},
		{"SECKILL_MYSQL_CA_FILE", "/nonexistent/ca.pem", "SECKILL_MYSQL_CA_FILE"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			_, err := LoadConfig()
			require.ErrorContains(t, err, c.says)
		})
	}
}

// SECKILL_PUBLIC_URL: unset, the sandbox links its checkout pages at the
// API's own address; set, where browsers reach the API (the balancer);
// anything but an absolute http(s) URL does not start.
func TestPublicURL(t *testing.T) {
	t.Setenv("SECKILL_PUBLIC_URL", "")
	os.Unsetenv("SECKILL_PUBLIC_URL")
	t.Setenv("SECKILL_HTTP_ADDR", ":18080")
	c, err := LoadConfig()
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:18080", c.PublicBase())
	require.Equal(t, "http://127.0.0.1:18080", (&Main{Config: c}).Provider().CheckoutBase)

	t.Setenv("SECKILL_PUBLIC_URL", "https://shop.example")
	c, err = LoadConfig()
	require.NoError(t, err)
	p := (&Main{Config: c}).Provider()
	require.Equal(t, "https://shop.example", p.CheckoutBase)
	require.Equal(t, "http://127.0.0.1:18080", p.APIBase, "the webhooks still go to the process itself")

	for _, bad := range []string{"shop.example", "ftp://shop.example", "https://"} {
		t.Setenv("SECKILL_PUBLIC_URL", bad)
		_, err = LoadConfig()
		require.ErrorContains(t, err, "SECKILL_PUBLIC_URL", bad)
	}
}
