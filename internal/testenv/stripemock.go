package testenv

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
)

// StripeMockKey is a test-mode secret key: stripe-mock accepts any key of
// the right shape. StripeWebhookSecret signs the test's Stripe events.
const (
	StripeMockKey       = "sk_test_seckill"
	StripeWebhookSecret = "whsec_test_seckill"
)

// StripeMock is stripe-mock, Stripe's API served from its OpenAPI spec
// (pinned in tools/stripe-mock/go.mod, built to bin/stripe-mock): it
// validates every request against the spec and answers static fixtures
// (a cancel does not change the status, metadata is not echoed,
// idempotency keys are not enforced). A recording proxy in front keeps
// what was sent, for Requests.
type StripeMock struct {
	// URL is the proxy's base URL (SECKILL_STRIPE_API_URL).
	URL string
	cmd *exec.Cmd
	out LogBuffer

	mu   sync.Mutex
	seen []StripeRequest
}

// StripeRequest is one request sent to stripe-mock, as the proxy saw it:
// Form is the form body of a POST, the query of a GET.
type StripeRequest struct {
	Method, Path, IdempotencyKey string
	Form                         url.Values
}

// Requests returns the requests sent so far, oldest first.
func (m *StripeMock) Requests() []StripeRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]StripeRequest(nil), m.seen...)
}

// Refunds are the refunds asked of Stripe, by payment intent, for the
// invariant that each refunded payment has exactly one (Env.ProviderRefunds).
// Requests under one idempotency key are one refund (Stripe answers a retry
// with the first refund); a second key for the same intent would be a second
// refund, kept under the key itself so that the invariant finds a refund of a
// payment MySQL does not know.
func (m *StripeMock) Refunds() map[string]seckill.Refund {
	out := map[string]seckill.Refund{}
	keys := map[string]string{} // intent → the key of its first refund
	for _, req := range m.Requests() {
		if req.Method != http.MethodPost || req.Path != "/v1/refunds" {
			continue
		}
		pi := req.Form.Get("payment_intent")
		amount, _ := strconv.ParseInt(req.Form.Get("amount"), 10, 64)
		r := seckill.Refund{PaymentID: pi, OrderNo: req.Form.Get("metadata[order_no]"), AmountCents: amount}
		switch first, ok := keys[pi]; {
		case !ok:
			keys[pi] = req.IdempotencyKey
			out[pi] = r
		case first != req.IdempotencyKey:
			out[req.IdempotencyKey] = r
		}
	}
	return out
}

// record keeps each request and forwards it to stripe-mock.
func (m *StripeMock) record(upstream *url.URL) http.Handler {
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		if r.Method == http.MethodGet {
			form = r.URL.Query()
		}
		m.mu.Lock()
		m.seen = append(m.seen, StripeRequest{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), form})
		m.mu.Unlock()
		proxy.ServeHTTP(w, r)
	})
}

// StartStripeMock starts bin/stripe-mock on a free loopback port, waits
// until it answers and stops it when the test ends. A missing binary
// fails the test, naming the make target that builds it.
func StartStripeMock(t testing.TB) *StripeMock {
	t.Helper()
	SkipShort(t, "stripe-mock (bin/stripe-mock)")
	bin := filepath.Join(repoRoot(), "bin", "stripe-mock")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: build it with `make stripe-mock` (`make test` builds it first)", bin)
	}
	addr := FreeAddr(t)
	m := &StripeMock{}
	// HTTPS on a port of the kernel's choosing: only HTTP is used, and a
	// fixed port would collide between tests running side by side.
	m.cmd = exec.Command(bin, "-http-addr", addr, "-https-addr", "127.0.0.1:0")
	m.cmd.Stdout, m.cmd.Stderr = &m.out, &m.out
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = m.cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("stripe-mock output:\n%s", m.out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/balance", nil)
		req.Header.Set("Authorization", "Bearer "+StripeMockKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			proxy := httptest.NewServer(m.record(&url.URL{Scheme: "http", Host: addr}))
			t.Cleanup(proxy.Close)
			m.URL = proxy.URL
			return m
		}
		select {
		case <-exited:
			t.Fatalf("stripe-mock exited before answering on %s:\n%s", addr, m.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("stripe-mock did not answer on %s within 30s: %v\n%s", addr, err, m.out.String())
		}
	}
}

// Configure makes c's payment provider Stripe on this stripe-mock
// (Options.Configure), its events signed with StripeWebhookSecret.
func (m *StripeMock) Configure(c *app.Config) {
	c.PaymentProvider, c.StripeSecretKey, c.StripeAPIURL = app.StripeProvider, StripeMockKey, m.URL
	c.StripeWebhookSecret = StripeWebhookSecret
}

// Env returns the variables that make a spawned seckill process's payment
// provider Stripe on this stripe-mock (Env.ProcessEnv's extras).
func (m *StripeMock) Env() []string {
	return []string{"SECKILL_PAYMENT_PROVIDER=" + app.StripeProvider, "SECKILL_STRIPE_SECRET_KEY=" + StripeMockKey,
		"SECKILL_STRIPE_API_URL=" + m.URL, "SECKILL_STRIPE_WEBHOOK_SECRET=" + StripeWebhookSecret}
}

// StripeEvent is a Stripe event object of type typ about a PaymentIntent.
func StripeEvent(t testing.TB, id, typ string, intent map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "object": "event", "api_version": "2024-06-20",
		"created": time.Now().Unix(), "type": typ, "data": map[string]any{"object": intent}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StripeSignature is the Stripe-Signature header of payload signed with
// secret at the time at, as Stripe signs its events.
func StripeSignature(payload []byte, secret string, at time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: at}).Header
}
