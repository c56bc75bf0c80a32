package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	seckillapp "github.com/seckill/seckill/internal/app"
)

// The HTTP baselines (bare Fiber, the admission-only API) run as processes
// of their own, like the API they stand for: served from the bench's own
// process they shared its Go runtime, its scheduler and its garbage
// collector with the load generator, and their figures swung by half from
// round to round while the subject's (a process of its own) held within a
// tenth. The bench starts `seckill-lab bench baseline-server`, writes it one
// ServerSpec as a JSON line on its stdin (secrets stay out of argv), reads
// the address it listens on from its stdout, and closes its stdin to stop
// it; the server cleans up after itself before it exits.

// Kinds of baseline server.
const (
	ServerFiber         = "fiber"
	ServerAdmissionOnly = "admission-only"
)

// ServerSpec is what a baseline server is told on its stdin.
type ServerSpec struct {
	Kind string `json:"kind"`
	// The admission-only API: the stack's secrets, limits and servers, and
	// the session it sells (from memory, on a scratch Redis prefix).
	JWTSecret     []byte            `json:"jwt_secret,omitempty"`
	WebhookSecret []byte            `json:"webhook_secret,omitempty"`
	AdminToken    string            `json:"admin_token,omitempty"`
	Limits        seckillapp.Limits `json:"limits"`
	RedisAddr     string            `json:"redis_addr,omitempty"`
	MySQLDSN      string            `json:"mysql_dsn,omitempty"`
	Stock         int               `json:"stock,omitempty"`
	PerUserLimit  int               `json:"per_user_limit,omitempty"`
	// RiskURL, when set, turns the risk check on (admission.RiskConfig, its
	// defaults) against this risk service.
	RiskURL string `json:"risk_url,omitempty"`
	// Tracing, when set, traces the admission-only API (its requests and
	// Redis calls) to an OTLP endpoint (tracing.go).
	Tracing *Tracing `json:"tracing,omitempty"`
}

// serverReady is the one line a baseline server writes on its stdout.
type serverReady struct {
	Addr string `json:"addr"`
}

// ServeBaseline is `seckill-lab bench baseline-server`: it reads a ServerSpec
// from in, serves that baseline on a free loopback port, writes the address
// to out, and serves until in is closed (or ctx ends).
func ServeBaseline(ctx context.Context, in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("baseline server: read the spec: %w", err)
	}
	var spec ServerSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("baseline server: spec: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The bench closes our stdin (or dies): stop serving.
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()

	var app *fiber.App
	switch spec.Kind {
	case ServerFiber:
		app = bareFiber()
	case ServerAdmissionOnly:
		a, cleanup, err := admissionOnlyAPI(ctx, spec)
		if err != nil {
			return err
		}
		defer cleanup()
		app = a
	default:
		return fmt.Errorf("baseline server: unknown kind %q", spec.Kind)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	if err := json.NewEncoder(out).Encode(serverReady{Addr: ln.Addr().String()}); err != nil {
		_ = app.Shutdown()
		return err
	}
	select {
	case <-ctx.Done():
		return app.ShutdownWithTimeout(5 * time.Second)
	case err := <-served:
		return err
	}
}

// bareFiber answers every order with the JSON of a refused admission.
func bareFiber() *fiber.App {
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	var ids atomic.Uint64
	app.Post("/api/v1/sessions/:id/orders", func(c *fiber.Ctx) error {
		return c.Status(fiber.StatusConflict).JSON(api.ErrorBody{Code: seckill.ESOLDOUT, Message: "sold out",
			TraceID: strconv.FormatUint(ids.Add(1), 36)})
	})
	return app
}

// baselineServer is a running baseline server process, seen from the bench.
type baselineServer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	errs  strings.Builder
}

// startBaselineServer runs `<exe> bench baseline-server` (under prefix,
// e.g. taskset) and returns once it listens.
func startBaselineServer(ctx context.Context, exe string, prefix []string, spec ServerSpec) (*baselineServer, error) {
	if exe == "" {
		return nil, errors.New("no seckill binary to run the baseline server (BaselineConfig.Exec)")
	}
	argv := append(append([]string(nil), prefix...), exe, "bench", "baseline-server")
	s := &baselineServer{cmd: exec.CommandContext(ctx, argv[0], argv[1:]...)}
	s.cmd.Stderr = &s.errs
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s baseline server: %w", spec.Kind, err)
	}
	line, _ := json.Marshal(spec)
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		s.stop()
		return nil, fmt.Errorf("%s baseline server: %w: %s", spec.Kind, err, s.errs.String())
	}
	var ready serverReady
	dec := json.NewDecoder(stdout)
	if err := dec.Decode(&ready); err != nil || ready.Addr == "" {
		s.stop()
		return nil, fmt.Errorf("%s baseline server did not start (%v): %s", spec.Kind, err, strings.TrimSpace(s.errs.String()))
	}
	// Whatever else it prints (GORM logs slow queries to stdout) is
	// drained, or a full pipe would block it mid-burst; stop's Wait ends
	// the copy by closing the pipe.
	go func() { _, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), stdout)) }()
	s.addr = ready.Addr
	return s, nil
}

// stop closes the server's stdin and waits for it to clean up and exit
// (killing it after 10 s).
func (s *baselineServer) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
