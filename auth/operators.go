package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill"
)

// OperatorTokens finds the operator of a named API token by the token's
// hash (mysql.DB): ENOTFOUND for an unknown or revoked one.
type OperatorTokens interface {
	Operator(ctx context.Context, tokenHash string) (*seckill.Operator, error)
}

// IdP verifies the access tokens of the company's identity provider.
type IdP struct {
	JWKS *JWKS
	// Issuer and Audience are required: the provider issues tokens for
	// every application of the company.
	Issuer   string
	Audience string
	// RoleClaim names the claim that carries the seckill role: a string,
	// or a list (groups) of which the most trusted role counts; a role
	// may carry RoleNamespace.
	RoleClaim string
	// NameClaim names the claim recorded as the operator's name (e.g.
	// email); sub when the token has none.
	NameClaim string
}

// Operators authenticates the callers of the admin API.
type Operators struct {
	// Bootstrap is SECKILL_ADMIN_TOKEN: an admin for the first day, to
	// create the real operators with. Every use is logged as such.
	Bootstrap string
	// Tokens finds named API tokens (nil: none are accepted).
	Tokens OperatorTokens
	// IdP verifies the identity provider's access tokens (nil: none).
	IdP *IdP
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Authenticate returns who the credential names. A bad or unknown
// credential is EUNAUTHORIZED; an identity provider's token without a
// seckill role is EFORBIDDEN (the caller is known, and may do nothing);
// a store that cannot answer is EUNAVAILABLE.
func (a *Operators) Authenticate(ctx context.Context, token string) (*seckill.Operator, error) {
	switch {
	case token == "":
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "operator credential required")
	case a.Bootstrap != "" && subtle.ConstantTimeCompare([]byte(token), []byte(a.Bootstrap)) == 1:
		return &seckill.Operator{Name: seckill.BootstrapOperator, Role: seckill.RoleAdmin, Via: seckill.CredentialBootstrap}, nil
	case seckill.IsOperatorToken(token):
		if a.Tokens == nil {
			return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "named operator tokens are not accepted here")
		}
		op, err := a.Tokens.Operator(ctx, seckill.HashOperatorToken(token))
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "unknown or revoked operator token")
		}
		return op, err
	case a.IdP != nil:
		return a.IdP.verify(token, clock(a.Now))
	}
	return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "operator credential not recognised")
}

func (p *IdP) verify(token string, now func() time.Time) (*seckill.Operator, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(token, claims, p.JWKS.keyfunc,
		jwt.WithValidMethods(asymmetric),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(clockSkew),
		jwt.WithTimeFunc(now),
		jwt.WithIssuer(p.Issuer),
		jwt.WithAudience(p.Audience),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "token issuer is not the configured one")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "token audience is not this service")
	case err != nil:
		return nil, refusal(err)
	}
	name, _ := claims[p.NameClaim].(string)
	if name == "" {
		name, _ = claims["sub"].(string)
	}
	if seckill.CheckOperatorName(name) != nil {
		return nil, seckill.Errorf(seckill.EUNAUTHORIZED, "token names no operator (claim %q or sub)", p.NameClaim)
	}
	role := roleOf(claims[p.RoleClaim])
	if role == "" {
		return nil, seckill.Errorf(seckill.EFORBIDDEN, "operator %s has no seckill role (claim %q)", name, p.RoleClaim)
	}
	return &seckill.Operator{Name: name, Role: role, Via: seckill.CredentialIdP}, nil
}

// RoleNamespace prefixes a role in an identity provider that names the
// roles of many applications in one claim ("seckill:admin"); a role of
// another namespace ("crm:admin") is not ours.
const RoleNamespace = "seckill:"

// roleOf reads a role claim: one role, or a list of which the most trusted
// known role counts (names that are not roles are someone else's groups),
// each bare ("admin") or in our namespace ("seckill:admin").
func roleOf(v any) seckill.Role {
	var names []any
	switch x := v.(type) {
	case string:
		names = []any{x}
	case []any:
		names = x
	}
	var best seckill.Role
	for _, n := range names {
		s, _ := n.(string)
		if r, err := seckill.ParseRole(strings.TrimPrefix(s, RoleNamespace)); err == nil && r.Allows(best) {
			best = r
		}
	}
	return best
}
