package testenv

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// FreeAddr returns a loopback address with a port nobody listens on (as of
// now: the caller binds it right away).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Balancer is HAProxy running deploy/haproxy/haproxy.cfg, the file `make
// stack` uses, in front of two API processes.
type Balancer struct {
	// Addr is where shoppers connect; Stats serves HAProxy's stats page.
	Addr, Stats string
}

// StartBalancer starts HAProxy (Debian's haproxy package; `make test`
// installs it) in front of the APIs at api1 and api2 and waits until it
// listens. It is stopped when the test ends.
func StartBalancer(t testing.TB, api1, api2 string) *Balancer {
	t.Helper()
	SkipShort(t, "HAProxy in front of API processes")
	_, here, _, _ := runtime.Caller(0)
	b := &Balancer{Addr: FreeAddr(t), Stats: FreeAddr(t)}
	startHAProxy(t, filepath.Join(filepath.Dir(here), "..", "..", "deploy", "haproxy", "haproxy.cfg"),
		"SECKILL_LB_ADDR="+b.Addr, "SECKILL_LB_STATS="+b.Stats, "SECKILL_API_1="+api1, "SECKILL_API_2="+api2)
	waitFor(t, "haproxy's stats page on "+b.Stats, func() error {
		resp, err := http.Get("http://" + b.Stats + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	return b
}

// startHAProxy runs haproxy with the config file cfg and env added to
// ours, until the test ends; its output is logged if the test failed.
func startHAProxy(t testing.TB, cfg string, env ...string) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not installed (apt-get install haproxy; make test does): %v", err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.CreateTemp("", "haproxy-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("haproxy (%s) output:\n%s", filepath.Base(cfg), out)
		}
		log.Close()
		os.Remove(log.Name())
	})
}

// URL is the balancer's base URL.
func (b *Balancer) URL() string { return fmt.Sprintf("http://%s", b.Addr) }
