package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// StartRedisTLS starts a redis-server of the test's own that serves TLS
// with a certificate of ca's and lets in only clients with one
// (tls-auth-clients), as a managed Redis with a private CA does. It also
// listens in plaintext on loopback, for the test's own checks. It is
// stopped when the test ends.
func StartRedisTLS(t testing.TB, ca *CA) (plain, tlsAddr string) {
	t.Helper()
	SkipShort(t, "redis-server with TLS")
	p, err := newRedisProcs("tls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	server := ca.Issue(t, "redis")
	tlsAddr = FreeAddr(t)
	port := freePort(t)
	plain, err = p.start(port, "--save", "", "--appendonly", "no",
		"--tls-port", tlsAddr[strings.LastIndex(tlsAddr, ":")+1:],
		"--tls-cert-file", server.CertFile, "--tls-key-file", server.KeyFile,
		"--tls-ca-cert-file", ca.CertFile, "--tls-auth-clients", "yes")
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: plain})
	defer rdb.Close()
	waitFor(t, "redis-server with TLS", func() error { return rdb.Ping(context.Background()).Err() })
	return plain, tlsAddr
}

// StartMariaDBTLS starts a MariaDB server of the test's own with SSL on,
// its certificate of ca's, in a fresh data directory, and returns its
// address. root (no password) may connect in plaintext, for the Env; the
// user TLSUser (no password) must come with a client certificate of ca's
// (REQUIRE X509), as a database that insists on mTLS has it. It is
// stopped when the test ends.
func StartMariaDBTLS(t testing.TB, ca *CA) string {
	t.Helper()
	SkipShort(t, "mariadbd with SSL")
	for _, tool := range []string{"mariadb-install-db", "mariadbd"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
				t.Fatalf("%s is needed for the MySQL TLS test (apt-get install mariadb-server)", tool)
			}
		}
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	server := ca.Issue(t, "mariadb")
	port := freePort(t)
	cmd := exec.Command(mariadbd(), "--no-defaults", "--datadir="+data, "--user=root",
		"--bind-address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--socket="+filepath.Join(dir, "sock"),
		"--pid-file="+filepath.Join(dir, "pid"), "--log-error="+filepath.Join(dir, "error.log"),
		"--skip-name-resolve=0", "--innodb-buffer-pool-size=32M",
		"--ssl-ca="+ca.CertFile, "--ssl-cert="+server.CertFile, "--ssl-key="+server.KeyFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mariadbd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("mariadbd error log:\n%s", b)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	db, err := sql.Open("mysql", "root:@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitFor(t, "mariadbd with SSL", func() error { return db.Ping() })
	for _, q := range []string{
		"CREATE USER '" + TLSUser + "'@'%' REQUIRE X509",
		"GRANT ALL ON *.* TO '" + TLSUser + "'@'%'",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return addr
}

// TLSUser is StartMariaDBTLS's user that must present a client certificate.
const TLSUser = "seckill_tls"

func mariadbd() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return "/usr/sbin/mariadbd"
}

func freePort(t testing.TB) int {
	addr := FreeAddr(t)
	var port int
	fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	return port
}

// waitFor polls ready for up to a minute.
func waitFor(t testing.TB, what string, ready func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
