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
	"time"
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
	cmd         *exec.Cmd
}

// StartBalancer starts HAProxy (Debian's haproxy package; `.ci/run`
// installs it) in front of the APIs at api1 and api2 and waits until it
// listens. It is stopped when the test ends.
func StartBalancer(t testing.TB, api1, api2 string) *Balancer {
	t.Helper()
	SkipShort(t, "HAProxy in front of API processes")
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatalf("haproxy is not installed (apt-get install haproxy; .ci/run does): %v", err)
	}
	_, here, _, _ := runtime.Caller(0)
	cfg := filepath.Join(filepath.Dir(here), "..", "..", "deploy", "haproxy", "haproxy.cfg")
	b := &Balancer{Addr: FreeAddr(t), Stats: FreeAddr(t)}
	b.cmd = exec.Command(bin, "-db", "-f", cfg)
	b.cmd.Env = append(os.Environ(), "SECKILL_LB_ADDR="+b.Addr, "SECKILL_LB_STATS="+b.Stats,
		"SECKILL_API_1="+api1, "SECKILL_API_2="+api2)
	log, err := os.CreateTemp("", "haproxy-*.log")
	if err != nil {
		t.Fatal(err)
	}
	b.cmd.Stdout, b.cmd.Stderr = log, log
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("haproxy output:\n%s", out)
		}
		log.Close()
		os.Remove(log.Name())
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + b.Stats + "/")
		if err == nil {
			resp.Body.Close()
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy did not listen on %s: %v", b.Stats, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is the balancer's base URL.
func (b *Balancer) URL() string { return fmt.Sprintf("http://%s", b.Addr) }
