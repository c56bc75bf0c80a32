package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// captchaAnswer reads the answer of a captcha the way only a test may: from
// its record in Redis ("<user>|<session>|<digits>").
func captchaAnswer(t *testing.T, e *testenv.Env, id string) string {
	t.Helper()
	rec, err := e.Redis.Get(context.Background(), e.Prefix+":captcha:"+id).Result()
	require.NoError(t, err)
	return rec[strings.LastIndex(rec, "|")+1:]
}

// A session that requires a human check: its ticket needs a solved captcha
// (image or audio), each captcha is checked once, right or wrong, and only
// by the shopper and for the session it was drawn for; with the ticket the
// purchase goes through. The invariants hold.
func TestCaptchaGuardsTheTicket(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	created, err := e.Client().CreateSession(ctx, &seckill.Session{SKUID: 5, Title: "Checked", PriceCents: 800, TotalStock: 2,
		PerUserLimit: 1, StartAt: time.Now().Add(-time.Minute), EndAt: time.Now().Add(time.Hour), RequireCaptcha: true})
	require.NoError(t, err)
	require.True(t, created.RequireCaptcha)
	require.True(t, created.RequireTicket, "a captcha implies the ticket")
	_, err = e.Client().Preheat(ctx, created.ID, false)
	require.NoError(t, err)
	base := fmt.Sprintf("/api/v1/sessions/%d", created.ID)
	alice, bob := e.Token(41), e.Token(42)

	draw := func(tok string) (id string) {
		r := e.Do("POST", base+"/captcha", tok, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		img, ok := strings.CutPrefix(r.Str("image"), "data:image/png;base64,")
		require.True(t, ok)
		png, err := base64.StdEncoding.DecodeString(img)
		require.NoError(t, err)
		require.Equal(t, "\x89PNG", string(png[:4]))
		return r.Str("captcha_id")
	}
	ticket := func(tok string, body any) *testenv.Response { return e.Do("POST", base+"/ticket", tok, body) }

	// Without an answer, a wrong one, someone else's, a used one: refused.
	testenv.RequireError(t, ticket(alice, nil), 400, "INVALID_ARGUMENT", "request body is required")
	testenv.RequireError(t, ticket(alice, map[string]any{}), 400, "INVALID_ARGUMENT", "requires a captcha")
	testenv.RequireError(t, ticket(alice, map[string]any{"captcha_id": 7, "captcha_answer": "1"}), 400, "INVALID_ARGUMENT", `"captcha_id"`)
	id := draw(alice)
	answer := captchaAnswer(t, e, id)
	wrong := "000000"
	if answer == wrong {
		wrong = "111111"
	}
	testenv.RequireError(t, ticket(alice, map[string]any{"captcha_id": id, "captcha_answer": wrong}), 403, "FORBIDDEN", "answer is wrong")
	testenv.RequireError(t, ticket(alice, map[string]any{"captcha_id": id, "captcha_answer": answer}), 403, "FORBIDDEN", "already used")
	id = draw(alice)
	testenv.RequireError(t, ticket(bob, map[string]any{"captcha_id": id, "captcha_answer": captchaAnswer(t, e, id)}), 403, "FORBIDDEN", "already used")
	testenv.RequireError(t, ticket(alice, map[string]any{"captcha_id": "nope", "captcha_answer": "1"}), 403, "FORBIDDEN", "expired")
	// No captcha, no order: the gate never sees the request.
	testenv.RequireError(t, e.Do("POST", base+"/orders", alice, nil), 403, "FORBIDDEN", "purchase ticket")

	// The audio of a captcha: its shopper only, and it does not use it up.
	id = draw(alice)
	audio := e.Do("GET", "/api/v1/captchas/"+id+"/audio", alice, nil)
	require.Equal(t, http.StatusOK, audio.Status)
	require.Equal(t, "audio/wav", audio.Header.Get("Content-Type"))
	require.Equal(t, "RIFF", string(audio.Raw[:4]))
	testenv.RequireError(t, e.Do("GET", "/api/v1/captchas/"+id+"/audio", bob, nil), 404, "NOT_FOUND", "not yours")

	// Solved: the ticket, then the purchase.
	ok := ticket(alice, map[string]any{"captcha_id": id, "captcha_answer": " " + captchaAnswer(t, e, id) + " "})
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Raw)
	buy := e.Do("POST", base+"/orders", alice, nil, "X-Seckill-Ticket", ok.Str("ticket"))
	require.Equal(t, http.StatusAccepted, buy.Status, "%s", buy.Raw)
	e.WaitStatus(alice, buy.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)

	// A session without a captcha has none to draw.
	plain := e.Session(1, 1, 100)
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/captcha", plain.ID), alice, nil), 400, "INVALID_ARGUMENT", "does not require")
	e.RequireInvariants(created.ID)
}
