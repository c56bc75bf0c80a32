package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/auth"
)

// IdP is an identity provider of the test's own: keys generated per run,
// its JWKS served over real HTTP, keys added and retired mid-test.
type IdP struct {
	t      testing.TB
	srv    *httptest.Server
	mu     sync.Mutex
	keys   map[string]crypto.Signer // kid → private key
	served []string                 // the kids the JWKS lists
}

func NewIdP(t testing.TB) *IdP {
	p := &IdP{t: t, keys: map[string]crypto.Signer{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *IdP) URL() string { return p.srv.URL + "/.well-known/jwks.json" }

// AddRSA and AddEC make a key and publish it in the JWKS.
func (p *IdP) AddRSA(kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(p.t, err)
	p.add(kid, k)
}

func (p *IdP) AddEC(kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(p.t, err)
	p.add(kid, k)
}

func (p *IdP) add(kid string, k crypto.Signer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys[kid] = k
	p.served = append(p.served, kid)
}

// Retire stops publishing kid (its private key stays, to sign with).
func (p *IdP) Retire(kid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, k := range p.served {
		if k == kid {
			p.served = append(p.served[:i], p.served[i+1:]...)
			return
		}
	}
}

func (p *IdP) serve(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []map[string]string
	b64 := base64.RawURLEncoding.EncodeToString
	for _, kid := range p.served {
		switch k := p.keys[kid].(type) {
		case *rsa.PrivateKey:
			keys = append(keys, map[string]string{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
				"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())})
		case *ecdsa.PrivateKey:
			x, y := make([]byte, 32), make([]byte, 32)
			k.X.FillBytes(x)
			k.Y.FillBytes(y)
			keys = append(keys, map[string]string{"kty": "EC", "kid": kid, "alg": "ES256", "use": "sig", "crv": "P-256",
				"x": b64(x), "y": b64(y)})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
}

// Sign makes a token with kid's key, named in its header.
func (p *IdP) Sign(kid string, claims jwt.MapClaims) string {
	p.mu.Lock()
	k := p.keys[kid]
	p.mu.Unlock()
	method := jwt.SigningMethod(jwt.SigningMethodRS256)
	if _, ok := k.(*ecdsa.PrivateKey); ok {
		method = jwt.SigningMethodES256
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	require.NoError(p.t, err)
	return s
}

// PublicPEM is kid's public key as PEM: what an algorithm-confusion
// attacker signs an HS256 token with.
func (p *IdP) PublicPEM(kid string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(p.keys[kid].Public())
	require.NoError(p.t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// JWKS is the provider's key set as a verifier keeps it, refreshed at
// once on an unknown kid so a rotation shows within the test.
func (p *IdP) JWKS() *auth.JWKS {
	j, err := auth.NewJWKS(p.URL(), auth.JWKSOptions{UnknownKIDEvery: 10 * time.Millisecond})
	require.NoError(p.t, err)
	p.t.Cleanup(j.Close)
	return j
}

// IdPIssuer and IdPAudience are what Claims puts in iss and aud.
const (
	IdPIssuer   = "https://login.shop.test"
	IdPAudience = "seckill"
)

// Claims are a valid token's claims for sub, with iss and aud.
func Claims(sub string, now time.Time, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{"sub": sub, "iss": IdPIssuer, "aud": IdPAudience,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// Unsigned is an alg "none" token.
func Unsigned(c jwt.MapClaims, kid string) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, c)
	tok.Header["kid"] = kid
	s, _ := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	return s
}

// HS256 signs c with secret, under kid.
func HS256(t testing.TB, secret []byte, c jwt.MapClaims, kid string) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(secret)
	require.NoError(t, err)
	return s
}

// SignWith signs tok with the private key of kid, whatever its header says.
func (p *IdP) SignWith(tok *jwt.Token, kid string) string {
	p.mu.Lock()
	k := p.keys[kid]
	p.mu.Unlock()
	s, err := tok.SignedString(k)
	require.NoError(p.t, err)
	return s
}
