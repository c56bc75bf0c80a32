package auth

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// checkedAlike asserts that own, the check of tokens carrying our header,
// accepts token only when golang-jwt's parser does, with the same user id
// and exp, and refuses it only as the parser does, with the same error;
// want tells whether own is to take it at all (false: it may leave the
// token to the parser).
func checkedAlike(t *testing.T, v *Shoppers, token string, want bool) {
	t.Helper()
	id, exp, decided, refused := v.own(token)
	pid, pexp, ours, err := v.parse(token)
	switch {
	case decided && refused != nil:
		require.Error(t, err, "own refused what the parser accepts: %s", token)
		require.Equal(t, err, refused, "own's refusal is not the parser's: %s", token)
	case decided:
		require.NoError(t, err, "own accepted what the parser refuses: %s", token)
		require.True(t, ours)
		require.Equal(t, pid, id, token)
		require.True(t, pexp.Equal(exp), "exp %v, the parser's %v", exp, pexp)
	}
	if want {
		require.True(t, decided && refused == nil, "own did not take a token of ours the parser accepts: %s", token)
	}
}

// namedAlike asserts what the sold-out memory relies on when it refuses a
// shopper by the token's name before checking it (Named): a token Verify
// accepts is named as the shopper it proves, and a named token Verify
// refuses is refused as forged or by time, never otherwise (a forged
// token then hears the same answer whoever it names).
func namedAlike(t *testing.T, v *Shoppers, token string) {
	t.Helper()
	named, ok := v.Named(token)
	if !ok {
		return
	}
	id, err := v.Verify(token)
	switch {
	case err == nil:
		require.Equal(t, id, named, "named as another shopper than it proves: %s", token)
	case !Forged(err):
		require.Contains(t, []error{errExpired, errNotYet, errNoExp}, err, "a named token refused otherwise than forged or by time: %s", token)
	}
}

// signed is a token with header and claims as given (raw JSON), signed
// HS256 with secret, the way IssueToken signs but with any bytes.
func signed(t *testing.T, header, claims string, secret []byte) string {
	t.Helper()
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	sig, err := jwt.SigningMethodHS256.Sign(in, secret)
	require.NoError(t, err)
	return in + "." + enc.EncodeToString(sig)
}

const ownHeaderJSON = `{"alg":"HS256","typ":"JWT"}`

// Every token own takes, golang-jwt's parser takes too, with the same
// user id and exp: own only skips decoding the one header we sign.
func TestOwnTokensCheckedAsTheParserDoes(t *testing.T) {
	now := time.Now()
	secret, old := []byte("secret"), []byte("old-secret")
	v := &Shoppers{Secrets: [][]byte{secret, old}, Now: func() time.Time { return now }}
	v.once.Do(v.build)
	exp, iat := now.Add(time.Hour).Unix(), now.Unix()
	claims := func(extra string) string {
		return `{"sub":"42","iat":` + itoa(iat) + `,"exp":` + itoa(exp) + extra + `}`
	}

	issued, err := IssueToken(secret, 42, time.Hour, now)
	require.NoError(t, err)
	byOld, err := IssueToken(old, 42, time.Hour, now)
	require.NoError(t, err)
	for name, tok := range map[string]string{
		"issued":                 issued,
		"by the rotated secret":  byOld,
		"exp within the leeway":  signed(t, ownHeaderJSON, `{"sub":"7","exp":`+itoa(now.Add(-2*time.Second).Unix())+`}`, secret),
		"fractional exp":         signed(t, ownHeaderJSON, `{"sub":"7","exp":`+itoa(exp)+`.75}`, secret),
		"exp as a quoted number": signed(t, ownHeaderJSON, `{"sub":"7","exp":"`+itoa(exp)+`"}`, secret),
		"an audience":            signed(t, ownHeaderJSON, claims(`,"aud":["shop"]`), secret),
		"unknown claims":         signed(t, ownHeaderJSON, claims(`,"name":"x","n":{"a":[1]}`), secret),
	} {
		t.Run(name, func(t *testing.T) { checkedAlike(t, v, tok, true) })
	}

	other, err := IssueToken([]byte("someone else's"), 42, time.Hour, now)
	require.NoError(t, err)
	parts := strings.Split(issued, ".")
	for name, tok := range map[string]string{
		"another secret":        other,
		"expired":               signed(t, ownHeaderJSON, `{"sub":"7","exp":`+itoa(now.Add(-time.Minute).Unix())+`}`, secret),
		"not valid yet":         signed(t, ownHeaderJSON, claims(`,"nbf":`+itoa(now.Add(time.Hour).Unix())), secret),
		"issued in the future":  signed(t, ownHeaderJSON, `{"sub":"7","exp":`+itoa(exp)+`,"iat":`+itoa(now.Add(time.Hour).Unix())+`}`, secret),
		"no exp":                signed(t, ownHeaderJSON, `{"sub":"7"}`, secret),
		"sub not a number":      signed(t, ownHeaderJSON, `{"sub":"x7","exp":`+itoa(exp)+`}`, secret),
		"sub zero":              signed(t, ownHeaderJSON, `{"sub":"0","exp":`+itoa(exp)+`}`, secret),
		"sub a JSON number":     signed(t, ownHeaderJSON, `{"sub":7,"exp":`+itoa(exp)+`}`, secret),
		"trailing bytes":        signed(t, ownHeaderJSON, claims("")+` {}`, secret),
		"not JSON":              signed(t, ownHeaderJSON, `sub=7`, secret),
		"payload changed":       parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"43","exp":`+itoa(exp)+`}`)) + "." + parts[2],
		"signature cut":         parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-2],
		"signature padded":      issued + "=",
		"a fourth segment":      issued + ".x",
		"no signature":          parts[0] + "." + parts[1] + ".",
		"alg none":              base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + ".",
		"HS384 header":          signed(t, `{"alg":"HS384","typ":"JWT"}`, claims(""), secret),
		"header with a space":   signed(t, `{"alg":"HS256", "typ":"JWT"}`, claims(""), secret),
		"header with a kid":     signed(t, `{"alg":"HS256","kid":"k","typ":"JWT"}`, claims(""), secret),
		"header in other order": signed(t, `{"typ":"JWT","alg":"HS256"}`, claims(""), secret),
		"empty":                 "",
		"dots":                  "..",
	} {
		t.Run(name, func(t *testing.T) { checkedAlike(t, v, tok, false) })
	}

	// Plain claims that do not pass are refused by own alone: a forged or
	// an expired token costs one check.
	for name, tok := range map[string]string{
		"another secret":  other,
		"payload changed": parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"43","exp":`+itoa(exp)+`}`)) + "." + parts[2],
		"expired":         signed(t, ownHeaderJSON, `{"sub":"7","exp":`+itoa(now.Add(-time.Minute).Unix())+`}`, secret),
		"not valid yet":   signed(t, ownHeaderJSON, claims(`,"nbf":`+itoa(now.Add(time.Hour).Unix())), secret),
		"no exp":          signed(t, ownHeaderJSON, `{"sub":"7"}`, secret),
		"sub zero":        signed(t, ownHeaderJSON, `{"sub":"0","exp":`+itoa(exp)+`}`, secret),
	} {
		_, _, decided, refused := v.own(tok)
		require.True(t, decided, name)
		require.Error(t, refused, name)
	}
}

// FuzzOwnTokens signs any claims under our header, with our secret and
// with another: own never takes one the parser refuses, nor reads another
// user id or exp from it, nor refuses one otherwise than the parser.
func FuzzOwnTokens(f *testing.F) {
	now := time.Now()
	exp := itoa(now.Add(time.Hour).Unix())
	for _, c := range []string{`{"sub":"42","exp":` + exp + `}`, `{"sub":"1","exp":` + exp + `,"nbf":1}`,
		`{"sub":"9","exp":1e10}`, `{"sub":"9","exp":` + exp + `,"aud":"x"}`, `{"SUB":"5","Exp":` + exp + `}`,
		`{"sub":"5","sub":"6","exp":` + exp + `}`, `{"sub":"\u0035","exp":` + exp + `}`, `[]`, `null`} {
		f.Add(c)
	}
	secret := []byte("secret")
	v := &Shoppers{Secrets: [][]byte{secret}, Now: func() time.Time { return now }}
	v.once.Do(v.build)
	f.Fuzz(func(t *testing.T, claims string) {
		for _, tok := range []string{signed(t, ownHeaderJSON, claims, secret), signed(t, ownHeaderJSON, claims, []byte("forged"))} {
			checkedAlike(t, v, tok, false)
			namedAlike(t, v, tok)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The claims IssueToken writes are read without encoding/json, and every
// other form is left to it.
func TestPlainClaimsAreIssueTokensForm(t *testing.T) {
	now := time.Now()
	tok, err := IssueToken([]byte("secret"), 42, time.Hour, now)
	require.NoError(t, err)
	body, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	require.NoError(t, err)
	c, ok := plainClaims(body)
	require.True(t, ok, "IssueToken's claims are not read plain: %s", body)
	require.Equal(t, "42", c.Subject)
	require.Equal(t, now.Add(time.Hour).Unix(), c.ExpiresAt.Unix())
	require.Equal(t, now.Unix(), c.IssuedAt.Unix())

	for _, body := range []string{
		`{"sub": "42","exp":1}`, `{"sub":"42","exp":1.5}`, `{"sub":"42","exp":"1"}`, `{"sub":"\u0034","exp":1}`,
		`{"SUB":"42","exp":1}`, `{"sub":"4","sub":"2","exp":1}`, `{"sub":"42","exp":1,"exp":2}`,
		`{"sub":"42","exp":1,"aud":"x"}`, `{"sub":"42","exp":-1}`, `{"sub":"42","exp":01}`,
		`{"sub":"42","exp":1234567890123456}`, `{"sub":"42","exp":1,}`, `{"sub":"","exp":1}`, `{"sub":42,"exp":1}`,
		`{"sub":"42","exp":1}}`, `{"sub":"42","exp":1} `, `[]`, `{`, ``,
	} {
		_, ok := plainClaims([]byte(body))
		require.False(t, ok, "read plain: %s", body)
	}
}

// FuzzPlainClaims: whatever plainClaims reads, encoding/json reads the
// same from it into the parser's claims type.
func FuzzPlainClaims(f *testing.F) {
	for _, c := range []string{`{"sub":"42","exp":1765000000,"iat":1764996400}`, `{"exp":999999999999999,"nbf":0}`,
		`{"sub":"007"}`, `{}`, `{"iat":1,"sub":"1","nbf":2,"exp":3}`, `{"sub":"1","sub":"2"}`} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c, ok := plainClaims([]byte(body))
		if !ok {
			return
		}
		var want jwt.RegisteredClaims
		require.NoError(t, json.Unmarshal([]byte(body), &want), "read plain, refused by encoding/json: %s", body)
		require.Equal(t, want.Subject, c.Subject, body)
		for _, d := range [][2]*jwt.NumericDate{{want.ExpiresAt, c.ExpiresAt}, {want.IssuedAt, c.IssuedAt}, {want.NotBefore, c.NotBefore}} {
			require.Equal(t, d[0] == nil, d[1] == nil, body)
			if d[0] != nil {
				require.True(t, d[0].Equal(d[1].Time), "%s: %v, encoding/json's %v", body, d[1], d[0])
			}
		}
		require.Empty(t, want.Issuer)
		require.Empty(t, want.Audience)
		require.Empty(t, want.ID)
	})
}
