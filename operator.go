package seckill

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// Role is what an operator may do on the admin API. Each role may do all
// that the roles before it may: a viewer reads, an operator also runs a
// live sale (pause, resume, end, add stock, refund), an admin also
// creates and changes sessions, the blocklist and the operators.
type Role string

const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// Roles lists the roles from the least to the most trusted.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

// ParseRole reads a role by its name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", Errorf(EINVALID, "role must be one of viewer, operator, admin (got %q)", s)
}

// rank orders the roles; 0 is no role at all.
func (r Role) rank() int {
	for i, x := range Roles {
		if x == r {
			return i + 1
		}
	}
	return 0
}

// Allows reports whether an operator of role r may do what needs role
// need. An unknown role allows nothing.
func (r Role) Allows(need Role) bool {
	return r.rank() > 0 && r.rank() >= need.rank()
}

// Credential is how an operator proved who they are.
type Credential string

const (
	// CredentialToken: a named API token (`seckill operators add`).
	CredentialToken Credential = "token"
	// CredentialIdP: an access token of the company's identity provider,
	// verified against its JWKS.
	CredentialIdP Credential = "idp"
	// CredentialBootstrap: SECKILL_ADMIN_TOKEN, the admin of the first day.
	CredentialBootstrap Credential = "bootstrap"
)

// BootstrapOperator is the name SECKILL_ADMIN_TOKEN's calls are recorded
// under.
const BootstrapOperator = "bootstrap"

// Operator is who made an admin call, as the credential says: the audit
// records Name and Role, never what a request claims about itself.
type Operator struct {
	Name string     `json:"name"`
	Role Role       `json:"role"`
	Via  Credential `json:"via"`
}

// OperatorToken is a named API token as the store keeps it: never the
// token itself, only its hash.
type OperatorToken struct {
	Name      string     `json:"name"`
	Role      Role       `json:"role"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// MaxOperatorName bounds an operator's name (the audit's "who").
const MaxOperatorName = 64

// CheckOperatorName accepts 1 to MaxOperatorName letters, digits and
// . _ - @ (a login or an e-mail address), nothing a log line or a shell
// would read differently.
func CheckOperatorName(name string) error {
	if name == "" || len(name) > MaxOperatorName {
		return Errorf(EINVALID, "operator name must be 1 to %d characters", MaxOperatorName)
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@", c)
		if !ok {
			return Errorf(EINVALID, "operator name %q: only letters, digits and . _ - @", name)
		}
	}
	return nil
}

// operatorTokenPrefix marks our tokens, so a secret scanner (and a person)
// can tell one in a log or a repository.
const operatorTokenPrefix = "skop_"

// NewOperatorToken returns a fresh named token, to print once, and its
// hash, to store. 32 random bytes: the hash needs no salt or stretching,
// as nobody can guess such a token to compare hashes against.
func NewOperatorToken() (token, hash string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	token = operatorTokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashOperatorToken(token), nil
}

// HashOperatorToken is the stored form of a named token.
func HashOperatorToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// IsOperatorToken tells a named token from a JWT or the bootstrap token by
// its prefix.
func IsOperatorToken(token string) bool {
	return strings.HasPrefix(token, operatorTokenPrefix)
}
