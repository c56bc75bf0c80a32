// Package signature is seckill's signed-request scheme, Stripe's: a
// Seckill-Signature header "t=<unix>,v1=<hex HMAC-SHA256(secret,
// "<t>.<body>")>", too old after 300 s. Payment webhooks in, order events
// out, risk checks and the payment adapter's calls are all signed with it,
// and none of the requests seckill signs follows a redirect (StayPut).
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// Header carries the signature.
const Header = "Seckill-Signature"

// webhookTolerance is how old a signed timestamp may be before the
// delivery counts as a replay.
const webhookTolerance = 300 * time.Second

// Sign returns the Seckill-Signature header value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>". The sandbox
// provider, the bench and the tests sign with it.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// StayPut is the CheckRedirect of every client that sends signed
// requests: each goes to the address configured for it and nowhere else.
// Followed, a 301, 302 or 303 turns the POST into a GET without its body
// (a page answering that GET with 200 would pass for the receiver's
// answer), and a 307 or 308 sends the signed request on to wherever the
// redirect points.
func StayPut(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Redirected is the error for an answer that redirects a request sent with
// StayPut (nil for any other answer): it names where the redirect points
// and the setting that must hold that address instead.
func Redirected(resp *http.Response, setting string) error {
	loc := resp.Header.Get("Location")
	if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
		return nil
	}
	return fmt.Errorf("answered %d, a redirect to %s: signed requests are not sent on through redirects, so %s must be the address that takes them",
		resp.StatusCode, loc, setting)
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a Seckill-Signature header against body at now. Any
// v1 entry may match (providers send several while rotating secrets).
func Verify(secret []byte, header string, body []byte, now time.Time) error {
	return VerifyAny([][]byte{secret}, header, body, now)
}

// VerifyAny is Verify for a rollover: any v1 entry made with
// any of the secrets matches.
func VerifyAny(secrets [][]byte, header string, body []byte, now time.Time) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "missing or malformed %s header", Header)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "signature timestamp is not a unix time")
	}
	if age := now.Sub(time.Unix(sec, 0)); age > webhookTolerance || age < -webhookTolerance {
		return seckill.Errorf(seckill.EUNAUTHORIZED, "signature timestamp is outside the %s tolerance", webhookTolerance)
	}
	for _, secret := range secrets {
		want := mac(secret, ts, body)
		for _, s := range sigs {
			if hmac.Equal(s, want) {
				return nil
			}
		}
	}
	return seckill.Errorf(seckill.EUNAUTHORIZED, "signature does not match")
}
