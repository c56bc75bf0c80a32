package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seckill/seckill/worker"
)

// PostgresAddr is the PostgreSQL the durable Temporal server of a test
// keeps its databases on (trust authentication, user postgres), like
// scripts/temporal-server.sh; SECKILL_TEST_POSTGRES_ADDR overrides it.
func PostgresAddr() string {
	if a := os.Getenv("SECKILL_TEST_POSTGRES_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:5432"
}

// DurableTemporalServer is a real Temporal server of a test's own (not the
// dev server): the binary scripts/temporal-server.sh runs, with the config
// in deploy/temporal/, on two fresh PostgreSQL databases that are dropped
// when the test ends. Kill and Start restart it on the same databases.
type DurableTemporalServer struct {
	Addr string
	// TLS is what a client presents and trusts when the server demands
	// mTLS (StartDurableTemporalServerTLS); nil: plaintext.
	TLS *tls.Config
	// DB and VisibilityDB are the databases' names.
	DB, VisibilityDB string

	t    testing.TB
	root string
	env  []string
	log  *os.File
	cmd  *exec.Cmd
}

// StartDurableTemporalServer creates the databases and sets up their
// schemas (deploy/temporal/setup.sh with bin/temporal-sql-tool), starts bin/temporal-server on free ports and
// registers the `default` namespace with seckill's search attributes. It
// fails (never skips, unless -short) when a binary or PostgreSQL is
// missing: `make test` builds them and CI starts PostgreSQL.
func StartDurableTemporalServer(t testing.TB) *DurableTemporalServer {
	t.Helper()
	return startDurable(t, nil)
}

// StartDurableTemporalServerTLS is StartDurableTemporalServer with the
// frontend's own mTLS on, as `make stack` runs it (TEMPORAL_TLS_DIR in
// deploy/temporal/temporal.yaml): certificates of ca's, a client
// certificate required. TLSDir is the directory of those files.
func StartDurableTemporalServerTLS(t testing.TB, ca *CA) *DurableTemporalServer {
	t.Helper()
	return startDurable(t, ca)
}

// TemporalTLSDir writes the files deploy/temporal/temporal.yaml reads from
// TEMPORAL_TLS_DIR, all of ca's: ca.pem, server.pem and server.key (the
// frontend's), client.pem and client.key (its system worker's, and any
// client's).
func TemporalTLSDir(t testing.TB, ca *CA) string {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, ca.CertFile, filepath.Join(dir, "ca.pem"))
	for _, who := range []string{"server", "client"} {
		p := ca.Issue(t, "temporal-"+who)
		copyFile(t, p.CertFile, filepath.Join(dir, who+".pem"))
		copyFile(t, p.KeyFile, filepath.Join(dir, who+".key"))
	}
	return dir
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// ClientOptions are what a client of this server dials with.
func (s *DurableTemporalServer) ClientOptions() client.Options {
	return client.Options{HostPort: s.Addr, ConnectionOptions: client.ConnectionOptions{TLS: s.TLS}}
}

func startDurable(t testing.TB, ca *CA) *DurableTemporalServer {
	t.Helper()
	SkipShort(t, "PostgreSQL and a durable Temporal server of its own (bin/temporal-server)")
	root := repoRoot()
	for _, b := range []string{"temporal-server", "temporal-sql-tool"} {
		if _, err := os.Stat(filepath.Join(root, "bin", b)); err != nil {
			t.Fatalf("bin/%s is missing: build it with `make temporal-bins`", b)
		}
	}
	suffix := randomHex(t, 6)
	s := &DurableTemporalServer{
		t: t, root: root,
		DB: "seckill_test_" + suffix, VisibilityDB: "seckill_test_" + suffix + "_vis",
	}

	ports := freePorts(t, 10)
	s.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	pgAddr := PostgresAddr()
	s.env = append(os.Environ(),
		"TEMPORAL_PORT="+strconv.Itoa(ports[0]),
		"TEMPORAL_HTTP_PORT="+strconv.Itoa(ports[1]),
		"TEMPORAL_HISTORY_PORT="+strconv.Itoa(ports[2]),
		"TEMPORAL_MATCHING_PORT="+strconv.Itoa(ports[3]),
		"TEMPORAL_WORKER_PORT="+strconv.Itoa(ports[4]),
		"TEMPORAL_FRONTEND_MEMBERSHIP_PORT="+strconv.Itoa(ports[5]),
		"TEMPORAL_HISTORY_MEMBERSHIP_PORT="+strconv.Itoa(ports[6]),
		"TEMPORAL_MATCHING_MEMBERSHIP_PORT="+strconv.Itoa(ports[7]),
		"TEMPORAL_WORKER_MEMBERSHIP_PORT="+strconv.Itoa(ports[8]),
		"TEMPORAL_METRICS_PORT="+strconv.Itoa(ports[9]),
		"TEMPORAL_PG_ADDR="+pgAddr,
		"TEMPORAL_PG_USER=postgres",
		"TEMPORAL_DB="+s.DB,
		"TEMPORAL_VISIBILITY_DB="+s.VisibilityDB,
		// Smaller pools than a deployment's: tests run servers side by side
		// on one PostgreSQL.
		"TEMPORAL_PG_MAX_CONNS=5",
		"TEMPORAL_PG_VISIBILITY_MAX_CONNS=2",
		"TEMPORAL_DYNAMIC_CONFIG="+filepath.Join(root, "deploy", "temporal", "dynamicconfig.yaml"),
		"TEMPORAL_LOG_LEVEL=error",
	)
	if ca != nil {
		dir := TemporalTLSDir(t, ca)
		s.env = append(s.env, "TEMPORAL_TLS_DIR="+dir)
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.cert)
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: "localhost"}
	}

	started := time.Now()
	t.Cleanup(s.dropDatabases)
	// The script scripts/temporal-server.sh and docker-compose.yml use.
	setup := exec.Command(filepath.Join(root, "deploy", "temporal", "setup.sh"), "schema")
	setup.Env = append(s.env,
		"TEMPORAL_SQL_TOOL="+filepath.Join(root, "bin", "temporal-sql-tool"),
		"TEMPORAL_SCHEMA_DIR="+schemaRoot(t))
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("deploy/temporal/setup.sh schema: %v (is PostgreSQL running on %s? CI starts it)\n%s", err, pgAddr, out)
	}
	t.Logf("durable temporal: schemas of %s and %s set up in %s", s.DB, s.VisibilityDB, time.Since(started).Round(time.Millisecond))

	f, err := os.CreateTemp("", "seckill-temporal-server-*.log")
	if err != nil {
		t.Fatal(err)
	}
	s.log = f
	t.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
	t.Cleanup(s.Kill)
	started = time.Now()
	s.Start()
	t.Logf("durable temporal: frontend on %s answered in %s", s.Addr, time.Since(started).Round(time.Millisecond))
	s.registerNamespace()
	return s
}

// Start (re)starts the server on its databases and waits until the
// frontend answers.
func (s *DurableTemporalServer) Start() {
	s.t.Helper()
	s.cmd = exec.Command(filepath.Join(s.root, "bin", "temporal-server"),
		"--root", s.root, "--config", filepath.Join("deploy", "temporal"), "--env", "temporal", "--allow-no-auth", "start")
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start temporal-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	if err := waitHealthy(s.ClientOptions(), 90*time.Second, exited); err != nil {
		s.t.Fatalf("temporal-server on %s did not come up: %v\n%s", s.Addr, err, tail(s.log.Name()))
	}
}

// Kill stops the server with SIGKILL: nothing is flushed or handed over.
func (s *DurableTemporalServer) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	// Wait runs in Start's goroutine; signal 0 fails once the process is reaped.
	for i := 0; i < 100 && s.cmd.Process.Signal(syscall.Signal(0)) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	s.cmd = nil
}

// StartUI starts the Web UI (bin/temporal-ui-server with
// deploy/temporal/ui.yaml, as scripts/temporal-server.sh runs it) for this
// server on a free port, and returns its base URL once its API answers. It
// is stopped when the test ends.
func (s *DurableTemporalServer) StartUI() string {
	s.t.Helper()
	bin := filepath.Join(s.root, "bin", "temporal-ui-server")
	if _, err := os.Stat(bin); err != nil {
		s.t.Fatalf("bin/temporal-ui-server is missing: build it with `make temporal-bins`")
	}
	port := strconv.Itoa(freePorts(s.t, 1)[0])
	cmd := exec.Command(bin, "--root", s.root, "--config", filepath.Join("deploy", "temporal"), "--env", "ui", "start")
	cmd.Env = append(os.Environ(), "TEMPORAL_UI_ADDRESS="+s.Addr, "TEMPORAL_UI_IP=127.0.0.1", "TEMPORAL_UI_PORT="+port)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start temporal-ui-server: %v", err)
	}
	s.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/api/v1/namespaces/default/search-attributes")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("temporal-ui-server on %s did not come up: %v\n%s", base, err, tail(s.log.Name()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// registerNamespace creates the `default` namespace (the real server, unlike
// the dev server, has none) and seckill's search attributes, and waits until
// the worker's own check passes: the frontend's namespace cache takes a
// refresh interval to see a new namespace.
func (s *DurableTemporalServer) registerNamespace() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, s.ClientOptions())
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: "default", WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		s.t.Fatalf("register namespace default: %v", err)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, k := range worker.SearchAttributeKeys {
		attrs[k.GetName()] = k.GetValueType()
	}
	for {
		_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: "default", SearchAttributes: attrs,
		})
		if err == nil || strings.Contains(err.Error(), "already exists") {
			if err = worker.CheckSearchAttributes(ctx, c, "default"); err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("search attributes on %s: %v", s.Addr, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// sqlTool runs bin/temporal-sql-tool on one database.
func (s *DurableTemporalServer) sqlTool(db string, args ...string) error {
	host, port, _ := net.SplitHostPort(PostgresAddr())
	cmd := exec.Command(filepath.Join(s.root, "bin", "temporal-sql-tool"),
		append([]string{"--plugin", "postgres12_pgx", "--ep", host, "-p", port, "-u", "postgres", "--db", db}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("temporal-sql-tool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *DurableTemporalServer) dropDatabases() {
	s.Kill()
	for _, db := range []string{s.DB, s.VisibilityDB} {
		if err := s.sqlTool(db, "drop-database", "-f"); err != nil {
			s.t.Logf("drop %s: %v", db, err)
		}
	}
}

// temporalSchema finds schema/postgresql/v12 of the go.temporal.io/server
// module that tools/go.mod pins (once per test process).
var temporalSchema = sync.OnceValues(func() (string, error) {
	cmd := exec.Command("go", "list", "-modfile=tools/go.mod", "-m", "-f", "{{.Dir}}", "go.temporal.io/server")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list go.temporal.io/server: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "schema", "postgresql", "v12"), nil
})

// schemaRoot is the schema files of the very server the test runs.
func schemaRoot(t testing.TB) string {
	t.Helper()
	dir, err := temporalSchema()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// freePorts returns n distinct ports free at the time of the call: all are
// held open together so none is handed out twice. They are drawn below
// 32768, out of the kernel's ephemeral range (so no outgoing connection takes
// one meanwhile) and because Temporal keeps membership ports in a PostgreSQL
// smallint (cluster_membership.rpc_port).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("no %d free ports between 20000 and 32767", n)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(20000+mathrand.IntN(12768)))
		if err != nil {
			continue
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// tail returns the end of a log file, for a failure message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
