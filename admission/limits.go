package admission

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// Limiter is a rate limiter shared by every API process (Redis).
type Limiter interface {
	Allow(ctx context.Context, key string, perSecond int) (allowed bool, retryAfter time.Duration, err error)
}

// Limits are the fleet-wide rate limits of a shopper's calls, in requests
// per second (0: off): per user, per client IP and, for requests that
// carry a device cookie, per device (Service.limit reads it). Limiter keeps
// them; it is required when any is on.
type Limits struct {
	Limiter          Limiter
	User, IP, Device int
}

// Allow applies the per-user and per-IP limits (ip as its limit counts
// it) and, for a device ("" for none), the per-device one. If Redis
// cannot answer, the call is refused with UNAVAILABLE: a limit is never
// skipped.
func (l *Limits) Allow(ctx context.Context, user int64, ip netip.Addr, device string) Answer {
	type limit struct {
		key string
		rps int
	}
	limits := [3]limit{{"user:" + strconv.FormatInt(user, 10), l.User}, {"ip:" + ip.String(), l.IP}}
	n := 2
	if device != "" {
		limits[2], n = limit{"device:" + device, l.Device}, 3
	}
	for _, k := range limits[:n] {
		if ans := l.allow(ctx, k.key, k.rps); ans.Err != nil {
			return ans
		}
	}
	return Answer{}
}

// limit applies the fleet's rate limits to a purchase or a registration:
// per user, per IP and, for a shopper screened here (a first-come sale's
// purchase, a reserved sale's registration), per device: its cookie's id
// (a cookie this shop did not sign is INVALID_ARGUMENT), which the risk
// check asks about next.
func (s *Service) limit(ctx context.Context, r *Request, screened bool) Answer {
	if screened {
		device, err := s.DeviceID(r.DeviceCookie)
		if err != nil {
			return Answer{Err: err}
		}
		r.device = device
	}
	return s.Limits.Allow(ctx, r.UserID, r.LimitIP, r.device)
}

// allow takes one token of key's bucket, of rps per second.
func (l *Limits) allow(ctx context.Context, key string, rps int) Answer {
	if rps <= 0 {
		return Answer{}
	}
	ok, retry, err := l.Limiter.Allow(ctx, key, rps)
	if err != nil {
		return Answer{Err: err}
	}
	if !ok {
		return Answer{Err: ErrRateLimited, Layer: LayerRateLimit, RetryAfter: retry}
	}
	return Answer{}
}

// ErrRateLimited refuses a call over a rate limit.
var ErrRateLimited = seckill.Errorf(seckill.ERATELIMITED, "too many requests; retry after the Retry-After delay")

// DeviceCookie is the shop page's device cookie: "<id>.<signature>",
// signed with a key derived from the JWT secret so that no client can
// make one up.
const DeviceCookie = "seckill_device"

// devicePurpose derives the keys that sign device ids from the JWT
// secrets (derivedKeys): a deployment has one secret less to keep, and
// every API process agrees, across a rotation too.
const devicePurpose = "seckill device cookie v1"

// SignDevice is the device cookie of id, signed with the current key.
func (s *Service) SignDevice(id string) string {
	m := hmac.New(sha256.New, s.deviceKeys[0])
	m.Write([]byte(id))
	return id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// DeviceID returns the device id of a device cookie's value, "" for
// none; a cookie this shop did not sign (with any JWT secret of a
// rotation) is INVALID_ARGUMENT.
func (s *Service) DeviceID(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	id, sig64, ok := strings.Cut(raw, ".")
	sig, err := base64.RawURLEncoding.DecodeString(sig64)
	if !ok || len(id) != 32 || err != nil || !macOfAny(s.deviceKeys, []byte(id), sig) {
		return "", seckill.Errorf(seckill.EINVALID, "the %s cookie is not one this shop issued; reload the shop page", DeviceCookie)
	}
	return strings.Clone(id), nil
}

// derivedKeys derives a key for one purpose from each JWT secret, in
// their order (the first signs): tickets and device cookies need no
// secret of their own, rotate with it, and cannot be taken for a token
// or for each other.
func derivedKeys(secrets [][]byte, purpose string) [][]byte {
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(purpose))
		keys[i] = m.Sum(nil)
	}
	return keys
}

// macOfAny reports whether sig is the HMAC-SHA256 of payload under any
// of keys.
func macOfAny(keys [][]byte, payload, sig []byte) bool {
	for _, k := range keys {
		m := hmac.New(sha256.New, k)
		m.Write(payload)
		if hmac.Equal(sig, m.Sum(nil)) {
			return true
		}
	}
	return false
}
