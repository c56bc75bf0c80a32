package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/testenv"
)

// tokens is a store of named tokens by hash (the MySQL one is tested in
// mysql/).
type tokens map[string]*seckill.Operator

func (s tokens) Operator(_ context.Context, hash string) (*seckill.Operator, error) {
	if op, ok := s[hash]; ok {
		return op, nil
	}
	if hash == seckill.HashOperatorToken("skop_store-down") {
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "mysql: connection refused")
	}
	return nil, seckill.Errorf(seckill.ENOTFOUND, "no such token")
}

func TestOperatorsAreWhoTheirCredentialSays(t *testing.T) {
	p := testenv.NewIdP(t)
	p.AddRSA("k1")
	p.AddEC("k2")
	mei, meiHash, err := seckill.NewOperatorToken()
	require.NoError(t, err)
	a := &auth.Operators{
		Bootstrap: "bootstrap-secret",
		Tokens:    tokens{meiHash: {Name: "mei", Role: seckill.RoleOperator, Via: seckill.CredentialToken}},
		IdP: &auth.IdP{JWKS: p.JWKS(), Issuer: testenv.IdPIssuer, Audience: "seckill",
			RoleClaim: "seckill_role", NameClaim: "email"},
	}
	ctx := context.Background()
	now := time.Now()

	for _, c := range []struct {
		name, token string
		want        seckill.Operator
	}{
		{"bootstrap", "bootstrap-secret", seckill.Operator{Name: "bootstrap", Role: seckill.RoleAdmin, Via: seckill.CredentialBootstrap}},
		{"named token", mei, seckill.Operator{Name: "mei", Role: seckill.RoleOperator, Via: seckill.CredentialToken}},
		{"IdP, role as a string", p.Sign("k1", testenv.Claims("u-1", now, jwt.MapClaims{"email": "ana@shop.test", "seckill_role": "viewer"})),
			seckill.Operator{Name: "ana@shop.test", Role: seckill.RoleViewer, Via: seckill.CredentialIdP}},
		{"IdP, roles as groups: the most trusted counts", p.Sign("k2", testenv.Claims("u-2", now, jwt.MapClaims{"email": "bo@shop.test",
			"seckill_role": []string{"marketing", "viewer", "admin", "operator"}})),
			seckill.Operator{Name: "bo@shop.test", Role: seckill.RoleAdmin, Via: seckill.CredentialIdP}},
		{"IdP, a namespaced role", p.Sign("k1", testenv.Claims("u-4", now, jwt.MapClaims{"email": "di@shop.test", "seckill_role": "seckill:admin"})),
			seckill.Operator{Name: "di@shop.test", Role: seckill.RoleAdmin, Via: seckill.CredentialIdP}},
		{"IdP, namespaced roles of several applications", p.Sign("k2", testenv.Claims("u-5", now, jwt.MapClaims{"email": "ed@shop.test",
			"seckill_role": []string{"other:x", "crm:admin", "seckill:operator", "billing:admin"}})),
			seckill.Operator{Name: "ed@shop.test", Role: seckill.RoleOperator, Via: seckill.CredentialIdP}},
		{"IdP, no name claim: sub", p.Sign("k1", testenv.Claims("u-3", now, jwt.MapClaims{"seckill_role": "operator"})),
			seckill.Operator{Name: "u-3", Role: seckill.RoleOperator, Via: seckill.CredentialIdP}},
	} {
		op, err := a.Authenticate(ctx, c.token)
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, *op, c.name)
	}

	refused := map[string]string{
		"nothing":                "",
		"almost the bootstrap":   "bootstrap-secreT",
		"unknown named token":    "skop_" + "x",
		"a shopper's token":      mustIssue(t),
		"expired":                p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin", "exp": now.Add(-time.Minute).Unix()})),
		"not valid yet":          p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin", "nbf": now.Add(time.Hour).Unix()})),
		"wrong issuer":           p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin", "iss": "https://other.test"})),
		"wrong audience":         p.Sign("k2", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin", "aud": "crm"})),
		"unknown kid":            unknownKid(t, p, testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin"})),
		"alg none":               testenv.Unsigned(testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin"}), "k1"),
		"HS256 with public key":  testenv.HS256(t, p.PublicPEM("k1"), testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin"}), "k1"),
		"HS256 with bootstrap":   testenv.HS256(t, []byte("bootstrap-secret"), testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin"}), "k1"),
		"name a shell would see": p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin", "email": "x; rm -rf /"})),
	}
	for name, tok := range refused {
		_, err := a.Authenticate(ctx, tok)
		require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err), name)
	}

	// Known, but no role of ours: 403, not 401 (signing in again will
	// not help; an admin must grant the role). Another application's
	// admin is none of ours.
	for _, roles := range []any{[]string{"marketing"}, "crm:admin", []string{"other:admin", "seckill:root", "seckill:"}} {
		_, err = a.Authenticate(ctx, p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"email": "cy@shop.test", "seckill_role": roles})))
		require.Equal(t, seckill.EFORBIDDEN, seckill.ErrorCode(err), "%v", roles)
	}

	// A store that cannot answer is not a bad credential.
	_, err = a.Authenticate(ctx, "skop_store-down")
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))

	// Without the IdP configured its tokens are refused; without a store,
	// named tokens are.
	bare := &auth.Operators{Bootstrap: "bootstrap-secret"}
	for _, tok := range []string{mei, p.Sign("k1", testenv.Claims("u", now, jwt.MapClaims{"seckill_role": "admin"}))} {
		_, err := bare.Authenticate(ctx, tok)
		require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))
	}
}

func TestRolesAllow(t *testing.T) {
	for _, c := range []struct {
		role, need seckill.Role
		ok         bool
	}{
		{seckill.RoleViewer, seckill.RoleViewer, true},
		{seckill.RoleViewer, seckill.RoleOperator, false},
		{seckill.RoleOperator, seckill.RoleViewer, true},
		{seckill.RoleOperator, seckill.RoleAdmin, false},
		{seckill.RoleAdmin, seckill.RoleOperator, true},
		{"", seckill.RoleViewer, false},
		{"root", seckill.RoleViewer, false},
	} {
		require.Equal(t, c.ok, c.role.Allows(c.need), "%s needs %s", c.role, c.need)
	}
	_, err := seckill.ParseRole("superuser")
	require.Equal(t, seckill.EINVALID, seckill.ErrorCode(err))
}

func mustIssue(t *testing.T) string {
	tok, err := auth.IssueToken([]byte("shopper-secret"), 1, time.Hour, time.Now())
	require.NoError(t, err)
	return tok
}

// unknownKid is a token signed by a key the provider never published.
func unknownKid(t *testing.T, p *testenv.IdP, c jwt.MapClaims) string {
	p.AddRSA("never-published")
	p.Retire("never-published")
	return p.Sign("never-published", c)
}
