package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"go.temporal.io/sdk/client"

	apiclient "github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/toxi"
	"github.com/seckill/seckill/worker"
)

// proc is one process of the stack under a supervisor: when it dies (a
// kill, a crash, a start that failed because a dependency was down) it is
// started again, unless chaos holds it down on purpose.
type proc struct {
	name string
	args []string
	env  []string
	log  *os.File

	mu   sync.Mutex
	cmd  *exec.Cmd
	held bool
	stop bool
	// exited is closed when the current cmd has exited.
	exited chan struct{}
}

func (p *proc) start() error {
	cmd := exec.Command(p.args[0], p.args[1:]...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = p.log, p.log
	// A process group of its own: a SIGKILL reaches what it started, and
	// an operator's Ctrl-C reaches chaos, which then stops its stack.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// supervise restarts the process whenever it exits, until shutdown.
func (p *proc) supervise() {
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		<-exited
		for {
			time.Sleep(300 * time.Millisecond)
			p.mu.Lock()
			if p.stop {
				p.mu.Unlock()
				return
			}
			if p.held {
				p.mu.Unlock()
				continue
			}
			err := p.start()
			p.mu.Unlock()
			if err == nil {
				break
			}
			fmt.Fprintf(p.log, "chaos: %v\n", err)
		}
	}
}

// kill sends SIGKILL and waits for the exit; with hold, the supervisor
// leaves it down until release.
func (p *proc) kill(hold bool) {
	p.mu.Lock()
	p.held = hold
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited:
		// Already gone (and reaped): its pid may belong to someone else now.
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

func (p *proc) release() {
	p.mu.Lock()
	p.held = false
	p.mu.Unlock()
}

func (p *proc) shutdown() {
	p.mu.Lock()
	p.stop = true
	p.mu.Unlock()
	p.kill(true)
}

// links are one process's connections to the services, each through a toxi.
type links struct{ redis, mysql, temporal *toxi.Link }

func (l *links) all() []*toxi.Link { return []*toxi.Link{l.redis, l.mysql, l.temporal} }

// stack is what chaos owns: a file-backed Temporal dev server, one API and
// one worker started from the seckill binary, and toxis between each of
// them and Redis, MySQL and Temporal.
type stack struct {
	cfg      *Config
	temporal *proc
	api      *proc
	worker   *proc
	apiLinks links
	wrkLinks links
	baseURL  string
	tempAddr string
	toClose  []*toxi.Link
	logs     []*os.File
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

func (s *stack) logFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(s.cfg.Dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		s.logs = append(s.logs, f)
	}
	return f, err
}

func (s *stack) links(name, mysqlAddr string) (links, error) {
	var l links
	for _, x := range []struct {
		to       **toxi.Link
		service  string
		upstream string
	}{{&l.redis, "redis", s.cfg.RedisAddr}, {&l.mysql, "mysql", mysqlAddr}, {&l.temporal, "temporal", s.tempAddr}} {
		link, err := toxi.Start(name+"/"+x.service, x.upstream)
		if err != nil {
			return l, err
		}
		s.toClose = append(s.toClose, link)
		*x.to = link
	}
	return l, nil
}

// env is the environment of a seckill process joining the stack through l.
func (s *stack) env(l links, extra ...string) ([]string, error) {
	dsn, err := mysqldriver.ParseDSN(s.cfg.MySQLDSN)
	if err != nil {
		return nil, err
	}
	dsn.Addr = l.mysql.Addr
	return append(os.Environ(), append([]string{
		"SECKILL_MYSQL_DSN=" + dsn.FormatDSN(),
		"SECKILL_REDIS_ADDR=" + l.redis.Addr,
		"TEMPORAL_ADDRESS=" + l.temporal.Addr,
		"SECKILL_REDIS_PREFIX=" + s.cfg.RedisPrefix,
		"SECKILL_TASK_QUEUE=" + s.cfg.TaskQueue,
		"SECKILL_JWT_SECRET=" + string(s.cfg.JWTSecret),
		"SECKILL_WEBHOOK_SECRET=" + string(s.cfg.WebhookSecret),
		"SECKILL_ADMIN_TOKEN=" + s.cfg.AdminToken,
		// The soak sells no draw, but the worker refuses to start without a key.
		"SECKILL_DRAW_KEY=" + randomHex(32),
		"SECKILL_PAY_TIMEOUT=" + s.cfg.PayTimeout.String(),
		// Payments come from the soak itself, signed with its own secret.
		"SECKILL_PAYMENT_PROVIDER=sandbox",
		"SECKILL_RECONCILE_EVERY=0",
		"SECKILL_LIMIT_IP_RPS=0", "SECKILL_LIMIT_USER_RPS=0", "SECKILL_LIMIT_GLOBAL_RPS=0", "SECKILL_LIMIT_READ_RPS=0",
		"SECKILL_WORKER_HTTP_ADDR=127.0.0.1:0",
		"SECKILL_LOG_LEVEL=WARN",
	}, extra...)...), nil
}

// startStack starts Temporal, migrates, and starts the API and the worker
// behind their toxis; it returns once the API is ready.
func startStack(ctx context.Context, cfg *Config) (*stack, error) {
	s := &stack{cfg: cfg}
	var err error
	if s.tempAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	tlog, err := s.logFile("temporal")
	if err != nil {
		return nil, err
	}
	port := s.tempAddr[len("127.0.0.1:"):]
	s.temporal = &proc{name: "temporal", log: tlog, env: os.Environ(), args: append([]string{cfg.TemporalBin,
		"server", "start-dev", "--ip", "127.0.0.1", "--port", port, "--headless",
		"--db-filename", filepath.Join(cfg.Dir, "temporal.db"), "--log-level", "error"},
		worker.DevServerFlags()...)}
	if err := s.temporal.start(); err != nil {
		return nil, err
	}
	go s.temporal.supervise()
	if err := s.waitTemporal(ctx, 90*time.Second); err != nil {
		s.stop()
		return nil, err
	}

	mysqlCfg, err := mysqldriver.ParseDSN(cfg.MySQLDSN)
	if err != nil {
		s.stop()
		return nil, err
	}
	if s.apiLinks, err = s.links("api", mysqlCfg.Addr); err != nil {
		s.stop()
		return nil, err
	}
	if s.wrkLinks, err = s.links("worker", mysqlCfg.Addr); err != nil {
		s.stop()
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		s.stop()
		return nil, err
	}
	s.baseURL = "http://" + httpAddr
	for _, p := range []struct {
		to   **proc
		name string
		l    links
		env  []string
	}{
		{&s.api, "api", s.apiLinks, []string{"SECKILL_HTTP_ADDR=" + httpAddr}},
		{&s.worker, "worker", s.wrkLinks, nil},
	} {
		env, err := s.env(p.l, p.env...)
		if err != nil {
			s.stop()
			return nil, err
		}
		f, err := s.logFile(p.name)
		if err != nil {
			s.stop()
			return nil, err
		}
		*p.to = &proc{name: p.name, args: []string{cfg.Binary, p.name}, env: env, log: f}
		if err := (*p.to).start(); err != nil {
			s.stop()
			return nil, err
		}
		go (*p.to).supervise()
	}
	if err := s.waitReady(ctx, 90*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *stack) waitTemporal(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := client.DialContext(cctx, client.Options{HostPort: s.tempAddr, Logger: quiet{}})
		if err == nil {
			_, err = c.CheckHealth(cctx, &client.CheckHealthRequest{})
			c.Close()
		}
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(300 * time.Millisecond)
	}
	return fmt.Errorf("the Temporal dev server on %s did not come up in %s (see %s)", s.tempAddr, timeout, s.temporal.log.Name())
}

// waitReady waits until the API answers /readyz with 200: it, Redis, MySQL
// and Temporal are all reachable from it.
func (s *stack) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if apiclient.New(s.baseURL).Ready(ctx) == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(300 * time.Millisecond)
	}
	return errors.New("the API did not become ready in " + timeout.String() + " (see " + s.api.log.Name() + ")")
}

// heal removes every toxic, brings every link up and every process back.
func (s *stack) heal() {
	for _, l := range s.toClose {
		l.Clear()
		_ = l.SetDown(false)
	}
	for _, p := range []*proc{s.temporal, s.api, s.worker} {
		if p != nil {
			p.release()
		}
	}
}

func (s *stack) stop() {
	for _, p := range []*proc{s.api, s.worker, s.temporal} {
		if p != nil && p.cmd != nil {
			p.shutdown()
		}
	}
	for _, l := range s.toClose {
		l.Close()
	}
	for _, f := range s.logs {
		f.Close()
	}
}

// randomHex is n random bytes in hex: the soak's fresh secrets.
func randomHex(n int) string {
	k := make([]byte, n)
	_, _ = rand.Read(k)
	return hex.EncodeToString(k)
}
