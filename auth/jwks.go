// Package auth verifies who calls the API. Shoppers present a JWT: ours
// (HS256, any of the configured secrets while one rotates) or one of the
// shop's own login service (RS256 or ES256, its key found by kid in the
// service's JWKS). Operators present a named API token, an access token
// of the company's identity provider, or the bootstrap token; each comes
// out as a seckill.Operator with a name and a role.
//
// The rule for every JWT: the algorithm is chosen by the key, never by the
// token. HMAC secrets verify only HS256, a JWKS key only its own alg (and
// golang-jwt checks the key's type), so neither "none" nor an HS256 token
// signed with a public key can pass.
package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// JWKS is the key set of an identity provider, fetched over HTTP and kept
// fresh: refreshed every RefreshInterval, and at once (rate-limited) when
// a token names a kid it does not know, which is how a provider's key
// rotation reaches us without a restart.
type JWKS struct {
	kf     keyfunc.Keyfunc
	cancel context.CancelFunc
}

// JWKSOptions tune a JWKS; zero values take the defaults.
type JWKSOptions struct {
	// RefreshInterval is how often the set is fetched again (default 10m).
	RefreshInterval time.Duration
	// UnknownKIDEvery is how often at most an unknown kid makes it fetch
	// the set again (default 30s): a stream of forged kids cannot turn
	// the API into a load generator against the provider.
	UnknownKIDEvery time.Duration
	// HTTPTimeout bounds one fetch (default 5s).
	HTTPTimeout time.Duration
	Logger      *slog.Logger
}

// NewJWKS starts keeping the key set at url. A provider down at start does
// not stop the API: the set is fetched again until it answers, and tokens
// are refused meanwhile. Close stops the refreshes.
func NewJWKS(url string, o JWKSOptions) (*JWKS, error) {
	if url == "" {
		return nil, errors.New("auth: a JWKS needs a URL")
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{url}, keyfunc.Override{
		HTTPTimeout:       cmp.Or(o.HTTPTimeout, 5*time.Second),
		RefreshInterval:   cmp.Or(o.RefreshInterval, 10*time.Minute),
		RefreshUnknownKID: rate.NewLimiter(rate.Every(cmp.Or(o.UnknownKIDEvery, 30*time.Second)), 1),
		RateLimitWaitMax:  time.Second,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				log.Warn("JWKS refresh failed: tokens signed by keys not yet fetched are refused", "url", u, "error", err)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("auth: JWKS %s: %w", url, err)
	}
	return &JWKS{kf: kf, cancel: cancel}, nil
}

// Close stops the refreshes.
func (j *JWKS) Close() {
	if j != nil {
		j.cancel()
	}
}

// keyfunc finds a token's key by its kid. A token without a kid is
// refused: trying every key of the set would let any key of any alg the
// set holds vouch for it.
func (j *JWKS) keyfunc(t *jwt.Token) (any, error) {
	if kid, _ := t.Header["kid"].(string); kid == "" {
		return nil, errors.New("token has no kid")
	}
	return j.kf.Keyfunc(t)
}

// asymmetric are the algorithms a JWKS key may verify.
var asymmetric = []string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}
