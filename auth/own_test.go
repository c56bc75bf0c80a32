package auth

import (
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// checkedAlike asserts that own, the check of tokens carrying our header,
// accepts token only when golang-jwt's parser does, with the same user id
// and exp; want tells whether own is to take it at all (false: the
// parser decides alone).
func checkedAlike(t *testing.T, v *Shoppers, token string, want bool) {
	t.Helper()
	id, exp, ok := v.own(token)
	pid, pexp, ours, err := v.parse(token)
	if ok {
		require.NoError(t, err, "own accepted what the parser refuses: %s", token)
		require.True(t, ours)
		require.Equal(t, pid, id, token)
		require.True(t, pexp.Equal(exp), "exp %v, the parser's %v", exp, pexp)
	}
	if want {
		require.True(t, ok, "own did not take a token of ours the parser accepts: %s", token)
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
}

// FuzzOwnTokens signs any claims under our header and secret: own never
// takes one the parser refuses, nor reads another user id or exp from it.
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
		checkedAlike(t, v, signed(t, ownHeaderJSON, claims, secret), false)
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
