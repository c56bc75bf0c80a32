package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// build builds the command at ./cmd/<name> once per test process and
// returns the binary's path.
func build(name string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", name+"-bin-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/"+name)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build: %v\n%s", err, out)
		}
		return bin, nil
	})
}

var buildSeckill, buildLab = build("seckill"), build("seckill-lab")

// Binary builds the seckill binary once per test process and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	return built(t, buildSeckill)
}

// LabBinary builds the seckill-lab binary (bench, drill, chaos) once per
// test process and returns its path.
func LabBinary(t testing.TB) string {
	t.Helper()
	return built(t, buildLab)
}

func built(t testing.TB, build func() (string, error)) string {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return bin
}

// Process is a seckill subcommand running as its own OS process, so a drill
// can kill it the hard way.
type Process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has ended
}

// ProcessEnv returns the environment a seckill process needs to join this
// Env; extra entries come last and win (Via routes it through toxis).
func (e *Env) ProcessEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{
		"SECKILL_MYSQL_DSN=" + e.DSN,
		"SECKILL_REDIS_ADDR=" + e.RedisAddr,
		"SECKILL_REDIS_MASTER=" + e.RedisMaster,
		"TEMPORAL_ADDRESS=" + e.TemporalAddr,
		"SECKILL_REDIS_PREFIX=" + e.Prefix,
		"SECKILL_TASK_QUEUE=" + e.TaskQueue,
		"SECKILL_JWT_SECRET=" + string(JWTSecret),
		"SECKILL_WEBHOOK_SECRET=" + string(WebhookSecret),
		"SECKILL_ADMIN_TOKEN=" + AdminToken,
		"SECKILL_DRAW_KEY=" + DrawKey,
		"SECKILL_RECONCILE_EVERY=0",
		// Spawned workers refund through the sandbox, on purpose.
		"SECKILL_PAYMENT_PROVIDER=sandbox",
		// A test's polls all come from one address.
		"SECKILL_LIMIT_READ_RPS=0",
		// A port of its own for each worker's ops HTTP: tests run side by side.
		"SECKILL_WORKER_HTTP_ADDR=127.0.0.1:0",
		"SECKILL_LOG_LEVEL=WARN",
	}, extra...)...)
}

// Signal sends sig to the process (SIGTERM: the stop an orchestrator asks for).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Spawn starts `seckill <args>` with the Env's configuration; it is killed
// when the test ends.
func (e *Env) Spawn(env []string, args ...string) *Process {
	e.T.Helper()
	f, err := os.CreateTemp("", "seckill-proc-*.log")
	if err != nil {
		e.T.Fatalf("log file: %v", err)
	}
	cmd := exec.Command(Binary(e.T), args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.T.Fatalf("start seckill %v: %v", args, err)
	}
	p := &Process{cmd: cmd, log: f.Name(), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	e.T.Cleanup(func() {
		p.Kill()
		f.Close()
		if e.T.Failed() {
			if b, err := os.ReadFile(f.Name()); err == nil {
				e.T.Logf("seckill %v output:\n%s", args, b)
			}
		}
		os.Remove(f.Name())
	})
	return p
}

// Kill ends the process with SIGKILL (no graceful shutdown) and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.Wait(5 * time.Second)
}

// Output is what the process has written so far (stdout and stderr: the
// JSON log lines).
func (p *Process) Output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Wait waits up to timeout for the process to end by itself and returns
// its exit code; ok is false if it still runs.
func (p *Process) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}
