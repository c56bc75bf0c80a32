package testenv

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// StripeMockKey is a test-mode secret key: stripe-mock accepts any key of
// the right shape.
const StripeMockKey = "sk_test_seckill"

// StripeMock is stripe-mock, Stripe's API served from its OpenAPI spec
// (pinned in tools/stripe-mock/go.mod, built to bin/stripe-mock): it
// validates every request against the spec and answers static fixtures
// (a cancel does not change the status, metadata is not echoed,
// idempotency keys are not enforced).
type StripeMock struct {
	// URL is the HTTP base URL (SECKILL_STRIPE_API_URL).
	URL string
	cmd *exec.Cmd
	out LogBuffer
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
	m := &StripeMock{URL: "http://" + addr}
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
		req, _ := http.NewRequest(http.MethodGet, m.URL+"/v1/balance", nil)
		req.Header.Set("Authorization", "Bearer "+StripeMockKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
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
