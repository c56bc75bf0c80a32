package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill/worker"
)

// TemporalServer is a file-backed Temporal dev server of a test's own, so a
// drill can kill and restart it without disturbing other tests.
type TemporalServer struct {
	Addr string
	t    testing.TB
	bin  string
	db   string
	cmd  *exec.Cmd
}

// StartTemporalServer starts a file-backed dev server on a free port, from
// the binary `make temporal` builds (bin/temporal).
func StartTemporalServer(t testing.TB) *TemporalServer {
	t.Helper()
	SkipShort(t, "a Temporal dev server of its own (bin/temporal)")
	bin := TemporalBin(t)
	s := &TemporalServer{Addr: FreeAddr(t), t: t, bin: bin, db: filepath.Join(t.TempDir(), "temporal.db")}
	s.Start()
	t.Cleanup(s.Kill)
	return s
}

// TemporalBin returns the path of the Temporal CLI that `make temporal`
// builds (bin/temporal), failing the test when it is missing.
func TemporalBin(t testing.TB) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(here), "..", "..", "bin", "temporal")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: build it with `make temporal`", bin)
	}
	return bin
}

// Start (re)starts the server on its database file and waits until it answers.
func (s *TemporalServer) Start() {
	s.t.Helper()
	port := s.Addr[len("127.0.0.1:"):]
	s.cmd = exec.Command(s.bin, append([]string{"server", "start-dev", "--ip", "127.0.0.1", "--port", port, "--headless",
		"--db-filename", s.db, "--log-level", "error"}, worker.DevServerFlags()...)...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start temporal: %v", err)
	}
	if err := waitHealthy(client.Options{HostPort: s.Addr}, 60*time.Second, nil); err != nil {
		s.t.Fatalf("temporal dev server on %s did not come up: %v", s.Addr, err)
	}
}

// waitHealthy polls the frontend at addr until it answers a health check,
// for up to timeout; it gives up at once when exited is closed (the server
// process ended).
func waitHealthy(opts client.Options, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := client.DialContext(ctx, opts)
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-exited:
			return errors.New("the server exited")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stall freezes the server (SIGSTOP) for d, then lets it go on (SIGCONT):
// a server, or a machine, that answers nothing for a while and then
// everything late.
func (s *TemporalServer) Stall(d time.Duration) {
	if s.cmd == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(d)
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
}

// Kill stops the server with SIGKILL.
func (s *TemporalServer) Kill() {
	if s.cmd == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
}
