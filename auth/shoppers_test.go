package auth_test

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
)

func TestShopperTokensDuringASecretRotation(t *testing.T) {
	now := time.Now()
	oldSecret, newSecret := []byte("old-secret"), []byte("new-secret")
	v := &auth.Shoppers{Secrets: [][]byte{newSecret, oldSecret}}

	for name, secret := range map[string][]byte{"new": newSecret, "old": oldSecret} {
		tok, err := auth.IssueToken(secret, 42, time.Hour, now)
		require.NoError(t, err)
		id, err := v.Verify(tok)
		require.NoError(t, err, name)
		require.EqualValues(t, 42, id)
	}
	tok, err := auth.IssueToken([]byte("someone else's"), 42, time.Hour, now)
	require.NoError(t, err)
	_, err = v.Verify(tok)
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))

	// Once the rotation is over, the old secret's tokens are refused.
	done := &auth.Shoppers{Secrets: [][]byte{newSecret}}
	tok, _ = auth.IssueToken(oldSecret, 42, time.Hour, now)
	_, err = done.Verify(tok)
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
}

func TestShopperTokensOfTheShopsLogin(t *testing.T) {
	p := testenv.NewIdP(t)
	p.AddRSA("r1")
	p.AddEC("e1")
	secret := []byte("our-secret")
	v := &auth.Shoppers{Secrets: [][]byte{secret}, JWKS: p.JWKS(), Issuer: testenv.IdPIssuer, Audience: "seckill"}
	now := time.Now()

	for _, kid := range []string{"r1", "e1"} {
		id, err := v.Verify(p.Sign(kid, testenv.Claims("7", now, nil)))
		require.NoError(t, err, kid)
		require.EqualValues(t, 7, id)
	}
	ours, _ := auth.IssueToken(secret, 8, time.Hour, now)
	id, err := v.Verify(ours)
	require.NoError(t, err, "our own HS256 tokens still pass beside the login's")
	require.EqualValues(t, 8, id)

	refused := map[string]string{
		"expired":                   p.Sign("r1", testenv.Claims("7", now, jwt.MapClaims{"exp": now.Add(-time.Minute).Unix()})),
		"not valid yet":             p.Sign("e1", testenv.Claims("7", now, jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()})),
		"no exp":                    p.Sign("r1", jwt.MapClaims{"sub": "7", "iss": testenv.IdPIssuer, "aud": "seckill"}),
		"wrong issuer":              p.Sign("r1", testenv.Claims("7", now, jwt.MapClaims{"iss": "https://evil.test"})),
		"wrong audience":            p.Sign("e1", testenv.Claims("7", now, jwt.MapClaims{"aud": "another-app"})),
		"no audience":               p.Sign("e1", testenv.Claims("7", now, jwt.MapClaims{"aud": nil})),
		"no kid":                    p.SignWith(jwt.NewWithClaims(jwt.SigningMethodRS256, testenv.Claims("7", now, nil)), "r1"),
		"alg none":                  testenv.Unsigned(testenv.Claims("7", now, nil), "r1"),
		"HS256 with the public key": testenv.HS256(t, p.PublicPEM("r1"), testenv.Claims("7", now, nil), "r1"),
		"sub not a user id":         p.Sign("r1", testenv.Claims("alice", now, nil)),
	}
	// A key of ours that the JWKS does not publish, under a kid it does.
	p.AddRSA("rogue")
	p.Retire("rogue")
	forged := jwt.NewWithClaims(jwt.SigningMethodRS256, testenv.Claims("7", now, nil))
	forged.Header["kid"] = "r1"
	refused["signed by another key"] = p.SignWith(forged, "rogue")
	// An ES256 token naming the RSA key: alg is the key's, not the token's.
	refused["ES256 token under an RS256 kid"] = signAs(p, "e1", "r1", testenv.Claims("7", now, nil))

	for name, tok := range refused {
		_, err := v.Verify(tok)
		require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err), name)
	}

	// Without a JWKS configured, the login's tokens are refused outright.
	hsOnly := &auth.Shoppers{Secrets: [][]byte{secret}}
	_, err = hsOnly.Verify(p.Sign("r1", testenv.Claims("7", now, nil)))
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
}

func TestShopperTokensFollowTheLoginsKeyRotation(t *testing.T) {
	p := testenv.NewIdP(t)
	p.AddRSA("2026-11")
	v := &auth.Shoppers{JWKS: p.JWKS(), Issuer: testenv.IdPIssuer, Audience: "seckill"}
	now := time.Now()
	_, err := v.Verify(p.Sign("2026-11", testenv.Claims("1", now, nil)))
	require.NoError(t, err)

	// The login service rotates: a new key is published and the old one
	// retired. The first token of the new kid makes the verifier fetch the
	// set again; the old key's tokens are refused from then on.
	p.AddEC("2026-12")
	p.Retire("2026-11")
	require.Eventually(t, func() bool {
		_, err := v.Verify(p.Sign("2026-12", testenv.Claims("1", now, nil)))
		return err == nil
	}, 5*time.Second, 20*time.Millisecond, "the rotated key is fetched on its first unknown kid")
	// The very token verified above (RS256 signatures are deterministic):
	// a verifier that remembered it would let it pass.
	_, err = v.Verify(p.Sign("2026-11", testenv.Claims("1", now, nil)))
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err), "a retired key vouches for nothing")

	// A kid nobody published is refused (and costs at most a rate-limited
	// fetch).
	p.AddRSA("unpublished")
	p.Retire("unpublished")
	_, err = v.Verify(p.Sign("unpublished", testenv.Claims("1", now, nil)))
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
}

func FuzzShopperToken(f *testing.F) {
	secret := []byte("fuzz-secret")
	now := time.Unix(1_800_000_000, 0)
	good, _ := auth.IssueToken(secret, 7, time.Hour, now)
	for _, s := range []string{good, good + "x", "", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", good[:len(good)/2]} {
		f.Add(s)
	}
	v := &auth.Shoppers{Secrets: [][]byte{secret}, Now: func() time.Time { return now }}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.Verify(tok)
		if err == nil {
			if id <= 0 {
				t.Fatalf("accepted token with user id %d", id)
			}
			return
		}
		require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
	})
}

// signAs signs c with key's key and algorithm but names kid in the header.
func signAs(p *testenv.IdP, key, kid string, c jwt.MapClaims) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	return p.SignWith(tok, key)
}

func TestARememberedTokenExpiresWithItsExp(t *testing.T) {
	secret := []byte("secret")
	clk := time.Unix(1_800_000_000, 0)
	v := &auth.Shoppers{Secrets: [][]byte{secret}, Now: func() time.Time { return clk }}
	tok, err := auth.IssueToken(secret, 42, 30*time.Second, clk)
	require.NoError(t, err)
	id, err := v.Verify(tok)
	require.NoError(t, err)
	require.EqualValues(t, 42, id)

	// Within the leeway past exp the token still passes, as the parser
	// lets it; at exp plus the leeway it is refused although remembered.
	clk = clk.Add(34 * time.Second)
	_, err = v.Verify(tok)
	require.NoError(t, err)
	clk = clk.Add(time.Second)
	_, err = v.Verify(tok)
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
	require.ErrorContains(t, err, "token expired")
}

func TestARotatedOutSecretsRememberedTokenIsRefused(t *testing.T) {
	oldSecret, newSecret := []byte("old-secret"), []byte("new-secret")
	now := time.Now()
	tok, err := auth.IssueToken(oldSecret, 42, time.Hour, now)
	require.NoError(t, err)
	during := &auth.Shoppers{Secrets: [][]byte{newSecret, oldSecret}}
	_, err = during.Verify(tok)
	require.NoError(t, err, "the old secret still verifies during the rotation")

	// The secrets are read at the first token: ending a rotation is a
	// restart with SECKILL_JWT_SECRET holding the new secret alone, and
	// the new process remembers nothing the old one verified.
	during.Secrets = [][]byte{newSecret}
	_, err = during.Verify(tok)
	require.NoError(t, err, "a running verifier keeps the secrets it started with")
	after := &auth.Shoppers{Secrets: [][]byte{newSecret}}
	_, err = after.Verify(tok)
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
}

// Named reads whom a token of ours names without checking it; a check of
// such a token fails only as forged (Forged) or by time. The login's
// tokens are not named: their check can fail by their JWKS, which is
// neither.
func TestNamedTokensFailOnlyAsForgedOrByTime(t *testing.T) {
	p := testenv.NewIdP(t)
	p.AddRSA("r1")
	secret := []byte("our-secret")
	v := &auth.Shoppers{Secrets: [][]byte{secret}, JWKS: p.JWKS(), Issuer: testenv.IdPIssuer, Audience: "seckill"}
	now := time.Now()
	issue := func(key []byte, ttl time.Duration) string {
		tok, err := auth.IssueToken(key, 8, ttl, now)
		require.NoError(t, err)
		return tok
	}
	valid := issue(secret, time.Hour)
	for name, c := range map[string]struct {
		token  string
		forged bool
	}{
		"valid":                {valid, false},
		"expired":              {issue(secret, -time.Minute), false},
		"another secret's":     {issue([]byte("not ours"), time.Hour), true},
		"a signature tampered": {valid[:len(valid)-4] + "AAAA", true},
	} {
		id, ok := v.Named(c.token)
		require.True(t, ok, name)
		require.EqualValues(t, 8, id, name)
		_, err := v.Verify(c.token)
		require.Equal(t, c.forged, auth.Forged(err), "%s: %v", name, err)
	}

	extra, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "8", "exp": now.Add(time.Hour).Unix(), "aud": "x"}).SignedString(secret)
	require.NoError(t, err)
	p.AddRSA("gone")
	p.Retire("gone")
	unknownKid := p.Sign("gone", testenv.Claims("8", now, nil))
	for name, tok := range map[string]string{
		"the login's":       p.Sign("r1", testenv.Claims("8", now, nil)),
		"claims not plain":  extra,
		"an unknown kid":    unknownKid,
		"not a token":       "x",
		"sub not a user id": issueSub(t, secret, "0", now),
	} {
		_, ok := v.Named(tok)
		require.False(t, ok, name)
	}
	_, err = v.Verify(unknownKid)
	require.Error(t, err)
	require.False(t, auth.Forged(err), "a key not known is not a forgery: %v", err)
}

// issueSub is an HS256 token of ours naming sub as given.
func issueSub(t *testing.T, secret []byte, sub string, now time.Time) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: sub, ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}).SignedString(secret)
	require.NoError(t, err)
	return tok
}
