package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a private certificate authority a test makes, as a platform team
// has one: servers and clients get certificates from it, and trust only it.
type CA struct {
	// CertFile is the CA certificate (PEM), what clients and servers trust.
	CertFile string
	dir      string
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
}

// NewCA makes a CA whose files live in the test's temporary directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "seckill test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{dir: t.TempDir(), cert: cert, key: key}
	ca.CertFile = ca.write(t, "ca.pem", pemBlock("CERTIFICATE", der))
	return ca
}

// Pair is a certificate and its key, as files.
type Pair struct{ CertFile, KeyFile string }

// Issue makes a certificate named name for localhost and 127.0.0.1, good
// for a server and a client alike.
func (ca *CA) Issue(t testing.TB, name string) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{CertFile: ca.write(t, name+".pem", pemBlock("CERTIFICATE", der)),
		KeyFile: ca.write(t, name+".key", pemBlock("PRIVATE KEY", k))}
}

func (ca *CA) write(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// StartMTLSDoor puts a TLS door in front of upstream (HAProxy in TCP mode):
// it presents a certificate of ca's and lets in only clients with a
// certificate of ca's, then passes their bytes on in plaintext, as a
// Temporal frontend with mTLS or a cloud endpoint does. It returns the
// door's address; HAProxy stops when the test ends.
func StartMTLSDoor(t testing.TB, ca *CA, upstream string) string {
	t.Helper()
	SkipShort(t, "HAProxy as a TLS door")
	server := ca.Issue(t, "door")
	crt, _ := os.ReadFile(server.CertFile)
	key, _ := os.ReadFile(server.KeyFile)
	bundle := ca.write(t, "door-bundle.pem", append(crt, key...)) // HAProxy wants both in one file
	addr := FreeAddr(t)
	cfg := ca.write(t, "door.cfg", []byte(fmt.Sprintf(`global
  log stderr format short local0 warning
defaults
  mode tcp
  timeout connect 5s
  timeout client 10m
  timeout server 10m
frontend door
  bind %s ssl crt %s ca-file %s verify required alpn h2
  default_backend upstream
backend upstream
  server s1 %s
`, addr, bundle, ca.CertFile, upstream)))
	startHAProxy(t, cfg)
	waitFor(t, "the TLS door on "+addr, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
	return addr
}
