package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// own verifies a token that carries, byte for byte, the header IssueToken
// signs ({"alg":"HS256","typ":"JWT"}), as the parser would but without
// its generic steps: the header is not decoded, the HMAC is computed
// from states keyed once per secret (hmac.New keys one per check), and
// claims of the plain form IssueToken writes are read without
// reflection (plainClaims); any other claims are decoded as the parser
// decodes them. The claims are then held to golang-jwt's Validator with
// the parser's options. A shopper's first click of a sale carries such a
// token, and a keyed loser of the sale's first second pays its check
// (docs/BENCHMARKS.md). It reports false for any other token and for any
// it does not accept, which the parser then checks and explains: it
// accepts only what the parser accepts, with the same user id
// (TestOwnTokensCheckedAsTheParserDoes, FuzzOwnTokens).
func (v *Shoppers) own(token string) (id int64, exp time.Time, ok bool) {
	head, rest, _ := strings.Cut(token, ".")
	payload, sig, _ := strings.Cut(rest, ".")
	if head != v.ownHeader || payload == "" || sig == "" || strings.Contains(sig, ".") || len(v.macs) == 0 {
		return 0, time.Time{}, false
	}
	mac, err := v.parser.DecodeSegment(sig)
	if err != nil || !v.signed(token[:len(head)+1+len(payload)], mac) {
		return 0, time.Time{}, false
	}
	body, err := v.parser.DecodeSegment(payload)
	if err != nil {
		return 0, time.Time{}, false
	}
	claims, plain := plainClaims(body)
	if !plain && json.Unmarshal(body, &claims) != nil {
		return 0, time.Time{}, false
	}
	if v.validator.Validate(claims) != nil {
		return 0, time.Time{}, false
	}
	id, err = strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil || id <= 0 {
		return 0, time.Time{}, false
	}
	return id, claims.ExpiresAt.Time, true
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

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
