package api

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/signature"
)

// Bad input must come back as an INVALID_ARGUMENT error, never a panic or
// an internal error; a sale's well-formed times in the wrong order are
// OUT_OF_RANGE (422). `make test` runs each target briefly with -fuzz.

func FuzzDecodeOrderBody(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"quantity":1}`, `{"quantity":"1"}`, `{"quantity":1e99}`,
		`{"quantity":null}`, `[]`, `{"quantity":1}{}`, `{"q":1}`, "\x00", `{"quantity":-9223372036854775809}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var b orderBody
		err := decodeStrict(body, &b, true)
		requireCode(t, err, seckill.EINVALID)
	})
}

func FuzzDecodeSessionBody(f *testing.F) {
	f.Add([]byte(`{"sku_id":1,"title":"t","price_cents":1,"stock":1,"per_user_limit":1,"start_at":"2026-01-01T00:00:00Z","end_at":"2026-01-02T00:00:00Z"}`))
	f.Add([]byte(`{"start_at":"yesterday"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var b seckill.SessionDefinition
		err := decodeStrict(body, &b, false)
		if err == nil {
			_, err = b.Session(time.Now())
		}
		requireCode(t, err, seckill.EINVALID, seckill.EOUTOFRANGE)
	})
}

// The operator's bodies (PATCH a session, add stock) and the ticket's
// captcha answer: anything that is not valid is INVALID_ARGUMENT, never a
// panic or another code.
func FuzzDecodeSessionChange(f *testing.F) {
	f.Add([]byte(`{"title":"t","price_cents":1,"per_user_limit":2,"start_at":"2026-01-01T00:00:00Z","end_at":"2026-01-02T00:00:00Z"}`))
	f.Add([]byte(`{"add":5}`))
	f.Add([]byte(`{"add":-1,"end_at":"later"}`))
	f.Add([]byte(`{"start_at":"2030-01-01T00:00:00Z"}`)) // after the end: OUT_OF_RANGE
	f.Add([]byte(`{"captcha_id":"0123456789abcdef0123456789abcdef","captcha_answer":"123456"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		upd := &seckill.SessionUpdate{}
		err := decodeStrict(body, upd, false)
		if err == nil {
			ch := &seckill.SessionChange{Action: seckill.ActionUpdate, Actor: "a", RequestID: "r", Update: upd}
			if err = ch.Check(); err == nil && !upd.Empty() {
				_, err = upd.Apply(seckill.Session{SKUID: 1, Title: "t", PriceCents: 1, TotalStock: 1, PerUserLimit: 1,
					StartAt: time.Unix(1_800_000_000, 0), EndAt: time.Unix(1_800_003_600, 0)})
			}
		}
		requireCode(t, err, seckill.EINVALID, seckill.EOUTOFRANGE)
		var tb ticketBody
		requireCode(t, decodeStrict(body, &tb, false), seckill.EINVALID)
		var a addStockBody
		err = decodeStrict(body, &a, false)
		if err == nil && a.Add != nil {
			err = (&seckill.SessionChange{Action: seckill.ActionAddStock, Actor: "a", RequestID: "r", Add: *a.Add}).Check()
		}
		requireCode(t, err, seckill.EINVALID)
	})
}

func FuzzVerifyWebhook(f *testing.F) {
	secret := []byte("fuzz-secret")
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"event_id":"e","payment_id":"p","order_no":"1-a","amount_cents":1,"status":"SUCCEEDED"}`)
	f.Add(signature.Sign(secret, now, body), body)
	f.Add("t=,v1=", []byte{})
	f.Add("v1=00,t=99999999999999999999", body)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := signature.Verify(secret, header, body, now)
		if err != nil {
			requireCode(t, err, seckill.EUNAUTHORIZED)
			return
		}
		var wb webhookBody
		if err := decodeStrict(body, &wb, false); err == nil {
			_, err = wb.payment("trace")
			if err != nil {
				requireCode(t, err, seckill.EINVALID)
			}
		} else {
			requireCode(t, err, seckill.EINVALID)
		}
	})
}

func requireCode(t *testing.T, err error, codes ...string) {
	t.Helper()
	if err == nil {
		return
	}
	var e *seckill.Error
	if !errors.As(err, &e) || !slices.Contains(codes, e.Code) {
		t.Fatalf("want a %s error, got %v", strings.Join(codes, " or "), err)
	}
}

// The hand-written error body encoder writes exactly what encoding/json
// writes, for any strings: escapes, HTML-safe characters, line separators
// and invalid UTF-8 included.
func FuzzErrorBodyJSON(f *testing.F) {
	for _, s := range []string{"", "sold out", `field "user_id" must be a positive integer`, "a\\b", "<script>&</script>",
		"\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029", "héllo 秒杀 😀", "\xff\xfe", "a\xc3", "\xed\xa0\x80"} {
		f.Add(s, s+"!", "trace-"+s)
	}
	f.Fuzz(func(t *testing.T, code, message, trace string) {
		body := ErrorBody{Code: code, Message: message, TraceID: trace}
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendErrorJSON(nil, body); string(got) != string(want) {
			t.Fatalf("appendErrorJSON(%q, %q, %q)\n got %s\nwant %s", code, message, trace, got, want)
		}
	})
}
