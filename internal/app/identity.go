package app

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seckill/seckill/auth"
)

// secretList reads a comma-separated list of secrets: the first is the
// current one, the others are still accepted while a rotation runs.
func secretList(v string) [][]byte {
	var out [][]byte
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, []byte(s))
		}
	}
	return out
}

// JWTSecrets are SECKILL_JWT_SECRET's secrets, the signing one first.
func (c *Config) JWTSecrets() [][]byte { return secretList(c.JWTSecret) }

// SigningJWTSecret signs the shopper tokens we issue (nil when unset).
func (c *Config) SigningJWTSecret() []byte { return first(c.JWTSecrets()) }

// RotatedJWTSecrets are the others of a rotation: the tickets and device
// cookies an API signed with one of them still verify.
func (c *Config) RotatedJWTSecrets() [][]byte { return rest(c.JWTSecrets()) }

// WebhookSecrets are SECKILL_WEBHOOK_SECRET's secrets, the signing one
// first (the sandbox provider signs with it).
func (c *Config) WebhookSecrets() [][]byte { return secretList(c.WebhookSecret) }

// SigningWebhookSecret signs the sandbox's webhooks (nil when unset).
func (c *Config) SigningWebhookSecret() []byte { return first(c.WebhookSecrets()) }

// RotatedWebhookSecrets are the others of a rollover: they verify too.
func (c *Config) RotatedWebhookSecrets() [][]byte { return rest(c.WebhookSecrets()) }

func first(l [][]byte) []byte {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}

// rest is a list but its first.
func rest(l [][]byte) [][]byte {
	if len(l) > 1 {
		return l[1:]
	}
	return nil
}

// checkIdentity validates the JWKS settings: an absolute http(s) URL, and
// the issuer and audience with it, since an identity provider signs the
// tokens of every application of the company and only those two say a
// token is meant for us.
func (c *Config) checkIdentity() error {
	for _, j := range []struct{ name, url, issuer, audience, prefix string }{
		{"SECKILL_JWT_JWKS_URL", c.JWTJWKSURL, c.JWTIssuer, c.JWTAudience, "SECKILL_JWT"},
		{"SECKILL_ADMIN_JWKS_URL", c.AdminJWKSURL, c.AdminIssuer, c.AdminAudience, "SECKILL_ADMIN"},
	} {
		if j.url == "" {
			continue
		}
		if !absoluteHTTP(j.url) {
			return fmt.Errorf("%s=%q must be an absolute http(s) URL", j.name, j.url)
		}
		if j.issuer == "" || j.audience == "" {
			return fmt.Errorf("%s needs %s_ISSUER and %s_AUDIENCE: without them a token the provider issued for another application would pass", j.name, j.prefix, j.prefix)
		}
	}
	if c.AdminJWKSURL != "" && (c.AdminRoleClaim == "" || c.AdminNameClaim == "") {
		return errors.New("SECKILL_ADMIN_ROLE_CLAIM and SECKILL_ADMIN_NAME_CLAIM must name claims")
	}
	return nil
}

// identity holds the key sets a process keeps fresh; Main.Close stops
// their refreshes.
type identity struct {
	shopperJWKS, adminJWKS *auth.JWKS
}

// OpenIdentity starts the key sets the configuration names (Connect does;
// a Main built by hand calls it once its Config is final).
func (m *Main) OpenIdentity() error {
	c := m.Config
	var err error
	opts := auth.JWKSOptions{Logger: m.Log}
	if c.JWTJWKSURL != "" {
		if m.identity.shopperJWKS, err = auth.NewJWKS(c.JWTJWKSURL, opts); err != nil {
			return err
		}
	}
	if c.AdminJWKSURL != "" {
		if m.identity.adminJWKS, err = auth.NewJWKS(c.AdminJWKSURL, opts); err != nil {
			m.identity.shopperJWKS.Close()
			return err
		}
	}
	return nil
}

// CloseIdentity stops the key sets' refreshes (Close does).
func (m *Main) CloseIdentity() {
	m.identity.shopperJWKS.Close()
	m.identity.adminJWKS.Close()
}

// Shoppers verifies shoppers' tokens: ours with every secret of a
// rotation, and the shop login's by its JWKS when configured.
func (m *Main) Shoppers() *auth.Shoppers {
	c := m.Config
	return &auth.Shoppers{Secrets: c.JWTSecrets(), JWKS: m.identity.shopperJWKS, Issuer: c.JWTIssuer, Audience: c.JWTAudience}
}

// Operators authenticates the admin API's callers: the bootstrap token,
// the named tokens in MySQL, the identity provider's access tokens.
func (m *Main) Operators() *auth.Operators {
	c := m.Config
	o := &auth.Operators{Bootstrap: c.BootstrapToken(), Tokens: m.DB}
	if m.identity.adminJWKS != nil {
		o.IdP = &auth.IdP{JWKS: m.identity.adminJWKS, Issuer: c.AdminIssuer, Audience: c.AdminAudience,
			RoleClaim: c.AdminRoleClaim, NameClaim: c.AdminNameClaim}
	}
	return o
}
