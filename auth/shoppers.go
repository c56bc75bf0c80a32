package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/expiring"
)

// clockSkew is the leeway allowed on exp/nbf/iat between our clock and the
// token issuer's.
const clockSkew = 5 * time.Second

// A verified HS256 token is remembered for at most verifiedTTL (and never
// past its exp), at most maxVerified of them: a shopper of a burst clicks
// again and again with the same token, and decoding its claims was the
// largest cost left of a keyed loser (docs/BENCHMARKS.md). Only verified
// tokens go in, so a flood of forged ones costs a verification each, as
// without the cache, and evicts nothing that is in use.
const (
	verifiedTTL = time.Minute
	maxVerified = 1 << 15
)

// IssueToken returns a shopper JWT (HS256) for userID valid for ttl.
func IssueToken(secret []byte, userID int64, ttl time.Duration, now time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Subject:   strconv.FormatInt(userID, 10),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// Shoppers verifies shoppers' tokens: `sub` is the decimal user id, `exp`
// is required.
type Shoppers struct {
	// Secrets verify HS256 tokens, any of them: during a rotation the new
	// secret and the old one (SECKILL_JWT_SECRET, comma-separated; the
	// first signs what we issue).
	Secrets [][]byte
	// JWKS, when set, verifies the RS256 and ES256 tokens of the shop's
	// own login service, which must then carry Issuer and Audience: a
	// token the same provider issued for another application is not ours.
	JWKS     *JWKS
	Issuer   string
	Audience string
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// once builds, on the first token, what every token is checked with
	// (the fields are read-only from then on): no per-request slices.
	once      sync.Once
	methods   []string
	hsKeys    jwt.VerificationKeySet
	verified  *expiring.Map[string, int64]
	parser    *jwt.Parser
	validator *jwt.Validator
	ownHeader string      // the header segment of the tokens IssueToken signs
	macs      []sync.Pool // per secret, HMAC-SHA256 states keyed with it (own)
}

// Verify checks a shopper's token and returns its user id: a token that
// carries the header we sign by own, any other by golang-jwt's parser.
//
// Our own (HS256) tokens are remembered once verified: the secrets are
// read once, at the first token, and a rotation is a restart with a new
// SECKILL_JWT_SECRET, so a remembered token was signed by a secret this
// process still accepts. The login service's tokens are verified every
// time: its JWKS changes under a running process, and a retired key must
// vouch for nothing from its retirement on.
func (v *Shoppers) Verify(token string) (int64, error) {
	v.once.Do(v.build)
	now := clock(v.Now)()
	if id, ok := v.verified.Get(token, now); ok {
		return id, nil
	}
	id, exp, decided, err := v.own(token)
	ours := decided
	if !decided {
		id, exp, ours, err = v.parse(token)
	}
	if err != nil {
		return 0, err
	}
	if ours {
		v.remember(token, id, exp, now)
	}
	return id, nil
}

// Named is the user id a token in the form IssueToken signs names (its
// header byte for byte, plain claims, sub a positive decimal), read
// without checking the token; false for any other token. Verify refuses
// such a token only by time (expired, not yet valid, no exp) or as forged
// (Forged), never for want of a key: a caller may then answer a forged
// token as it answers the named shopper's own, as the sold-out memory
// does. The login service's tokens are never named: their check can fail
// on their JWKS.
func (v *Shoppers) Named(token string) (int64, bool) {
	v.once.Do(v.build)
	// A token own takes: Verify checks it there, never by the parser (nor
	// a JWKS).
	payload, _, ok := v.ownParts(token)
	if !ok {
		return 0, false
	}
	body, err := v.parser.DecodeSegment(payload)
	if err != nil {
		return 0, false
	}
	c, plain := plainClaims(body)
	if !plain {
		return 0, false
	}
	id, err := strconv.ParseInt(c.Subject, 10, 64)
	return id, err == nil && id > 0
}

// Forged reports whether Verify refused a token for proving no one: no
// key of ours signed it, or it is no token. A token we signed that is not
// valid now (expired, not yet valid) is not forged, nor is one of the
// login service whose key is not known.
func Forged(err error) bool {
	return errors.Is(err, errSignature) || errors.Is(err, errInvalid)
}

// build makes, on the first token, what every token is checked with.
func (v *Shoppers) build() {
	v.methods = []string{jwt.SigningMethodHS256.Alg()}
	if v.JWKS != nil {
		v.methods = append(v.methods, asymmetric...)
	}
	v.macs = make([]sync.Pool, len(v.Secrets))
	for i, s := range v.Secrets {
		v.hsKeys.Keys = append(v.hsKeys.Keys, s)
		v.macs[i].New = func() any { return hmac.New(sha256.New, s) }
	}
	v.verified = expiring.New[string, int64](maxVerified)
	opts := []jwt.ParserOption{jwt.WithValidMethods(v.methods), jwt.WithExpirationRequired(),
		jwt.WithLeeway(clockSkew), jwt.WithTimeFunc(clock(v.Now))}
	v.parser, v.validator = jwt.NewParser(opts...), jwt.NewValidator(opts...)
	signing, _ := jwt.New(jwt.SigningMethodHS256).SigningString()
	v.ownHeader, _, _ = strings.Cut(signing, ".")
}

// errNoUser refuses a token whose sub names no shopper.
var errNoUser = seckill.Errorf(seckill.EUNAUTHORIZED, "token sub must be a positive decimal user id")

// parse checks any token with golang-jwt's parser and returns its user id,
// its exp, and whether it is ours (HS256: it may be remembered).
func (v *Shoppers) parse(token string) (id int64, exp time.Time, ours bool, err error) {
	var claims jwt.RegisteredClaims
	t, err := v.parser.ParseWithClaims(token, &claims, v.key)
	if err != nil {
		return 0, exp, false, refusal(err)
	}
	ours = t.Method.Alg() == jwt.SigningMethodHS256.Alg()
	if !ours {
		if err := checkIssuer(&claims, v.Issuer, v.Audience); err != nil {
			return 0, exp, false, err
		}
	}
	id, err = strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return 0, exp, false, errNoUser
	}
	return id, claims.ExpiresAt.Time, ours, nil
}

// remember keeps a verified HS256 token until exp plus the leeway, as the
// parser would accept it, and at most verifiedTTL. The token is copied:
// the caller's string may be a view of a request buffer that is reused.
func (v *Shoppers) remember(token string, id int64, exp, now time.Time) {
	until := now.Add(verifiedTTL)
	if e := exp.Add(clockSkew); e.Before(until) {
		until = e
	}
	v.verified.Put(strings.Clone(token), id, until)
}

// own checks a token that carries, byte for byte, the header IssueToken
// signs ({"alg":"HS256","typ":"JWT"}), as the parser would but without
// its generic steps: the header is not decoded, the HMAC is computed
// from states keyed once per secret (hmac.New keys one per check), and
// claims of the plain form IssueToken writes are read without
// reflection (plainClaims); other claims are decoded as the parser
// decodes them. The claims are then held to golang-jwt's Validator with
// the parser's options. A shopper's first click of a sale carries such a
// token, and a keyed loser of the sale's first second pays its check
// (docs/BENCHMARKS.md).
//
// decided is false for any other token, which the parser then checks and
// explains, and for one it does not accept whose claims are not plain.
// A refusal of plain claims is decided here, in the parser's words (the
// parser checks the signature, then the claims, and reads the same
// claims), so that a forged or expired token costs one check, not two.
// It accepts only what the parser accepts, with the same user id, and
// refuses with the parser's answer (TestOwnTokensCheckedAsTheParserDoes,
// FuzzOwnTokens).
func (v *Shoppers) own(token string) (id int64, exp time.Time, decided bool, err error) {
	payload, sig, ok := v.ownParts(token)
	if !ok {
		return 0, exp, false, nil
	}
	mac, err := v.parser.DecodeSegment(sig)
	if err != nil {
		return 0, exp, false, nil
	}
	body, err := v.parser.DecodeSegment(payload)
	if err != nil {
		return 0, exp, false, nil
	}
	claims, plain := plainClaims(body)
	// refuse decides a refusal of plain claims, and leaves any other to
	// the parser.
	refuse := func(err error) (int64, time.Time, bool, error) {
		if !plain {
			err = nil
		}
		return 0, exp, plain, err
	}
	if !v.signed(token[:len(v.ownHeader)+1+len(payload)], mac) {
		return refuse(refusal(jwt.ErrTokenSignatureInvalid))
	}
	if !plain && json.Unmarshal(body, &claims) != nil {
		return 0, exp, false, nil
	}
	if err := v.validator.Validate(claims); err != nil {
		return refuse(refusal(err))
	}
	id, err = strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return refuse(errNoUser)
	}
	return id, claims.ExpiresAt.Time, true, nil
}

// ownParts splits a token that carries, byte for byte, the header
// IssueToken signs into its payload and signature segments; false for any
// other token, which the parser checks.
func (v *Shoppers) ownParts(token string) (payload, sig string, ok bool) {
	head, rest, _ := strings.Cut(token, ".")
	payload, sig, _ = strings.Cut(rest, ".")
	return payload, sig, head == v.ownHeader && payload != "" && sig != "" && !strings.Contains(sig, ".") && len(v.macs) > 0
}

// signed reports whether mac is the HMAC-SHA256 of s under one of our
// secrets, as golang-jwt's HS256 check computes and compares it.
func (v *Shoppers) signed(s string, mac []byte) bool {
	for i := range v.macs {
		h := v.macs[i].Get().(hash.Hash)
		h.Reset()
		h.Write([]byte(s))
		var sum [sha256.Size]byte
		ok := hmac.Equal(mac, h.Sum(sum[:0]))
		v.macs[i].Put(h)
		if ok {
			return true
		}
	}
	return false
}

// plainClaims reads claims written as IssueToken writes them: one JSON
// object, no spaces, whose only members are sub (a string of ASCII
// digits), exp, iat and nbf (integers of at most 15 digits, which a
// float64 holds exactly, so the parser's NumericDate reads the same
// second), each at most once. It reports false for anything else, which
// encoding/json then decodes as the parser does: a form it does not know
// is not refused here, only read the slow way.
func plainClaims(b []byte) (c jwt.RegisteredClaims, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return c, false
	}
	rest := b[1 : len(b)-1]
	for len(rest) > 0 {
		name, value, more, ok := member(rest)
		if !ok {
			return c, false
		}
		rest = more
		switch string(name) {
		case "sub":
			if c.Subject != "" || len(value) < 3 || value[0] != '"' || value[len(value)-1] != '"' || !digits(value[1:len(value)-1]) {
				return c, false
			}
			c.Subject = string(value[1 : len(value)-1])
		case "exp":
			if !seconds(value, &c.ExpiresAt) {
				return c, false
			}
		case "iat":
			if !seconds(value, &c.IssuedAt) {
				return c, false
			}
		case "nbf":
			if !seconds(value, &c.NotBefore) {
				return c, false
			}
		default:
			return c, false
		}
	}
	return c, true
}

// member splits `"name":value` from the members in b, value ending at the
// next comma (and b's rest after it) or at b's end; false when b does not
// start so or a comma ends it.
func member(b []byte) (name, value, rest []byte, ok bool) {
	if len(b) < 4 || b[0] != '"' {
		return nil, nil, nil, false
	}
	end := 1
	for end < len(b) && b[end] >= 'a' && b[end] <= 'z' {
		end++
	}
	if end+1 >= len(b) || b[end] != '"' || b[end+1] != ':' {
		return nil, nil, nil, false
	}
	name, b = b[1:end], b[end+2:]
	i := 0
	for i < len(b) && b[i] != ',' {
		i++
	}
	if i == len(b) {
		return name, b, nil, true
	}
	if i+1 == len(b) {
		return nil, nil, nil, false // a trailing comma
	}
	return name, b[:i], b[i+1:], true
}

// seconds reads a JSON integer of at most 15 digits into *d, once.
func seconds(b []byte, d **jwt.NumericDate) bool {
	if *d != nil || len(b) == 0 || len(b) > 15 || !digits(b) || (b[0] == '0' && len(b) > 1) {
		return false
	}
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
	}
	*d = jwt.NewNumericDate(time.Unix(n, 0))
	return true
}

// digits reports whether b is one ASCII digit or more.
func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// key picks the keys by the token's algorithm: our secrets for HS256, the
// login service's key of the token's kid for the others.
func (v *Shoppers) key(t *jwt.Token) (any, error) {
	if t.Method.Alg() == jwt.SigningMethodHS256.Alg() {
		return v.hsKeys, nil
	}
	return v.JWKS.keyfunc(t)
}

// clock is now, or time.Now when nil.
func clock(now func() time.Time) func() time.Time {
	if now != nil {
		return now
	}
	return time.Now
}

// checkIssuer holds a provider's token to the issuer and audience we were
// configured with.
func checkIssuer(c *jwt.RegisteredClaims, issuer, audience string) error {
	if c.Issuer != issuer {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "token issuer is not the configured one")
	}
	if !slices.Contains(c.Audience, audience) {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "token audience is not this service")
	}
	return nil
}

// refusal turns a parse failure into the 401 the caller sees, saying what
// is wrong without echoing the token. The answers are made once: a flood
// of bad tokens allocates no answer.
func refusal(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return errExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYet
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return errNoExp
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return errSignature
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return errUnverifiable
	default:
		return errInvalid
	}
}

var (
	errExpired   = seckill.Errorf(seckill.EUNAUTHORIZED, "token expired")
	errNotYet    = seckill.Errorf(seckill.EUNAUTHORIZED, "token not valid yet")
	errNoExp     = seckill.Errorf(seckill.EUNAUTHORIZED, "token has no exp claim")
	errSignature = seckill.Errorf(seckill.EUNAUTHORIZED, "token signature does not verify")
	// A key the token names (its kid) that the login service does not
	// publish, or not yet: Forged tells it from a wrong signature.
	errUnverifiable = seckill.Errorf(seckill.EUNAUTHORIZED, "token signature cannot be checked: its key is not known")
	errInvalid      = seckill.Errorf(seckill.EUNAUTHORIZED, "invalid token")
)
