// Package captcha is the human check of a session that requires one
// (dchest/captcha: distorted digits in a PNG, or spoken over noise in a
// WAV): a captcha is drawn for one shopper and one session, its answer kept
// in a store every API process shares, and checked once, right or wrong.
package captcha

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	dchest "github.com/dchest/captcha"

	"github.com/seckill/seckill"
)

// Store keeps the answers of the captchas handed out, shared by every API
// process (redis.Captchas): Take uses one up whatever the answer.
type Store interface {
	Put(ctx context.Context, id, record string, ttl time.Duration) error
	Peek(ctx context.Context, id string) (string, bool, error)
	Take(ctx context.Context, id string) (string, bool, error)
}

// TTL is how long a captcha may be answered; Length is its digits.
const (
	TTL    = 2 * time.Minute
	Length = 6
	width  = 240
	height = 80
)

var (
	errGone  = seckill.Errorf(seckill.EFORBIDDEN, "the captcha expired or was already used; fetch a new one")
	errWrong = seckill.Errorf(seckill.EFORBIDDEN, "the captcha answer is wrong; fetch a new one")
)

// record binds a captcha to the shopper and the session it was handed out
// for, with its answer: "<user>|<session>|<digits>".
func record(user, sessionID int64, digits []byte) string {
	b := make([]byte, len(digits))
	for i, d := range digits {
		b[i] = '0' + d
	}
	return fmt.Sprintf("%d|%d|%s", user, sessionID, b)
}

func parseRecord(rec string) (user, sessionID int64, answer string, ok bool) {
	parts := strings.Split(rec, "|")
	if len(parts) != 3 {
		return 0, 0, "", false
	}
	u, err1 := strconv.ParseInt(parts[0], 10, 64)
	s, err2 := strconv.ParseInt(parts[1], 10, 64)
	return u, s, parts[2], err1 == nil && err2 == nil
}

// Draw hands out a captcha for user in sessionID: its id and its image (a
// PNG data URL), answerable for TTL. A nil store is UNAVAILABLE.
func Draw(ctx context.Context, st Store, user, sessionID int64) (id, image string, err error) {
	if st == nil {
		return "", "", errUnconfigured
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id = hex.EncodeToString(raw)
	digits := dchest.RandomDigits(Length)
	if err := st.Put(ctx, id, record(user, sessionID, digits), TTL); err != nil {
		return "", "", err
	}
	image, err = Image(id, digits)
	return id, image, err
}

// Image draws the digits as a PNG data URL: the CPU a captcha costs
// (api's BenchmarkCaptchaImage).
func Image(id string, digits []byte) (string, error) {
	var png bytes.Buffer
	if _, err := dchest.NewImage(id, digits, width, height).WriteTo(&png); err != nil {
		return "", err
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png.Bytes()), nil
}

// Audio is the captcha id spoken (a WAV), for its shopper only; it does
// not use the captcha up.
func Audio(ctx context.Context, st Store, id string, user int64) ([]byte, error) {
	rec, ok, err := find(ctx, st, id, false)
	if err != nil {
		return nil, err
	}
	owner, _, answer, valid := parseRecord(rec)
	if !ok || !valid || owner != user {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "no such captcha (expired, used, or not yours)")
	}
	digits := make([]byte, len(answer))
	for i := range answer {
		digits[i] = answer[i] - '0'
	}
	var wav bytes.Buffer
	if _, err := dchest.NewAudio(id, digits, "en").WriteTo(&wav); err != nil {
		return nil, err
	}
	return wav.Bytes(), nil
}

// Check uses up the captcha id and says whether it was user's, for
// sessionID, answered right.
func Check(ctx context.Context, st Store, id, answer string, user, sessionID int64) error {
	rec, ok, err := find(ctx, st, id, true)
	if err != nil {
		return err
	}
	owner, sess, want, valid := parseRecord(rec)
	if !ok || !valid || owner != user || sess != sessionID {
		return errGone
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(answer)), []byte(want)) != 1 {
		return errWrong
	}
	return nil
}

var errUnconfigured = seckill.Errorf(seckill.EUNAVAILABLE, "captchas are not configured on this API")

func find(ctx context.Context, st Store, id string, take bool) (string, bool, error) {
	if st == nil {
		return "", false, errUnconfigured
	}
	if len(id) != 32 {
		return "", false, nil
	}
	if take {
		return st.Take(ctx, id)
	}
	return st.Peek(ctx, id)
}
