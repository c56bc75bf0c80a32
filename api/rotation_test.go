package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/temporal/starter"
)

// A deployment mid-rotation, configured as an operator would
// (comma-separated secrets, the shop login's JWKS): shoppers buy with a
// token of the new secret, of the old one and of the shop's own login
// service; the provider's webhooks verify under the old and the new
// secret; anything else is refused, and the sale's invariants hold.
func TestSecretsRotateWithoutDowntime(t *testing.T) {
	idp := testenv.NewIdP(t)
	idp.AddRSA("login-1")
	newJWT, newHook := []byte("jwt-secret-2026-12-of-thirty-two-bytes"), []byte("webhook-secret-2026-12")
	e := testenv.New(t, testenv.Options{Configure: func(c *app.Config) {
		c.JWTSecret = string(newJWT) + ", " + string(testenv.JWTSecret)
		c.WebhookSecret = string(newHook) + "," + string(testenv.WebhookSecret)
		c.JWTJWKSURL, c.JWTIssuer, c.JWTAudience = idp.URL(), testenv.IdPIssuer, testenv.IdPAudience
	}})
	sess := e.Session(10, 1, 500)
	path := fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID)
	now := time.Now()

	ofNew, err := auth.IssueToken(newJWT, 1, time.Hour, now)
	require.NoError(t, err)
	tokens := map[string]string{
		"new secret":   ofNew,
		"old secret":   e.Token(2),
		"shop's login": idp.Sign("login-1", testenv.Claims("3", now, nil)),
	}
	orders := map[string]string{}
	for name, tok := range tokens {
		res := e.Do("POST", path, tok, nil)
		require.Equal(t, http.StatusAccepted, res.Status, "%s: %s", name, res.Raw)
		orders[name] = res.Str("order_no")
	}
	for name, tok := range map[string]string{
		"another secret":                          mustToken(t, []byte("not ours"), 4),
		"login, wrong audience":                   idp.Sign("login-1", testenv.Claims("5", now, jwt.MapClaims{"aud": "crm"})),
		"HS256 under the login's kid, public key": testenv.HS256(t, idp.PublicPEM("login-1"), testenv.Claims("6", now, nil), "login-1"),
	} {
		res := e.Do("POST", path, tok, nil)
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s: %s", name, res.Raw)
	}

	// The provider signs with the new secret, a retried delivery still
	// with the old: both land; a third secret does not.
	e.WaitStatus(ofNew, orders["new secret"], 20*time.Second, seckill.StatusWaitPay)
	e.WaitStatus(e.Token(2), orders["old secret"], 20*time.Second, seckill.StatusWaitPay)
	cl := e.Client()
	cl.WebhookSecret = newHook
	_, err = cl.Pay(context.Background(), seckill.Payment{EventID: "evt-new", PaymentID: "pay-new", OrderNo: orders["new secret"], AmountCents: 500})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, e.Pay(orders["old secret"], "pay-old", "evt-old", 500).Status)
	cl.WebhookSecret = []byte("a third secret")
	_, err = cl.Pay(context.Background(), seckill.Payment{EventID: "evt-x", PaymentID: "pay-x", OrderNo: orders["shop's login"], AmountCents: 500})
	require.Equal(t, seckill.EUNAUTHORIZED, seckill.ErrorCode(err))

	e.WaitStatus(ofNew, orders["new secret"], 20*time.Second, seckill.StatusPaid)
	e.WaitStatus(e.Token(2), orders["old secret"], 20*time.Second, seckill.StatusPaid)
	e.WaitStatus(tokens["shop's login"], orders["shop's login"], 20*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

func mustToken(t *testing.T, secret []byte, user int64) string {
	tok, err := auth.IssueToken(secret, user, time.Hour, time.Now())
	require.NoError(t, err)
	return tok
}

// A rolling rotation of SECKILL_JWT_SECRET, one API at a time: at each
// step of the runbook (old → old,new → new,old → new) one API runs the
// step before and one the step after, and the purchase tickets and the
// device cookies either one made are accepted by the other (an API of
// new,old also accepts what one of old made); the sale's invariants hold.
// The runbook's second step matters: an API that signs with new while
// another knows only old would be refused by it.
func TestJWTRotationKeepsTicketsAndDeviceCookies(t *testing.T) {
	testenv.SkipShort(t, "MariaDB, Redis and Temporal")
	e := testenv.New(t, testenv.Options{NoAPI: true})
	oldS, newS := string(testenv.JWTSecret), "jwt-secret-2026-12-rotation-new-0123456789"
	steps := []string{oldS, oldS + "," + newS, newS + "," + oldS, newS}
	sess := &seckill.Session{SKUID: 1, Title: "rotation", PriceCents: 100, TotalStock: 20, PerUserLimit: 1,
		StartAt: time.Now().Add(-time.Second), EndAt: time.Now().Add(time.Hour), RequireTicket: true}
	require.NoError(t, e.DB.CreateSession(context.Background(), sess, nil))
	_, err := e.Gate.Preheat(context.Background(), sess.ID, sess.TotalStock)
	require.NoError(t, err)

	apis := make([]string, len(steps)) // each step's API, by base URL
	for i, secrets := range steps {
		cfg := *e.App.Config
		cfg.JWTSecret = secrets
		m := *e.App
		m.Config = &cfg
		srv, err := app.NewAPI(m.APIConfig(false), starter.Config{}, e.DB, e.Gate, e.Orders)
		require.NoError(t, err)
		srv.Start(t.Context())
		serve(t, e, srv)
		apis[i] = e.BaseURL
	}
	at := func(i int) { e.BaseURL = apis[i] }
	// Each neighbour pair both ways, and the shortcut old → new,old one
	// way: what the API of old made, that of new,old accepts.
	pairs := [][2]int{{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 2}, {0, 2}}
	var orders []string
	for user, p := range pairs {
		from, to := p[0], p[1]
		// A shopper's token of a secret both sides know: the shoppers'
		// tokens rotate as they did before (TestSecretsRotateWithoutDowntime).
		common := oldS
		if !strings.Contains(steps[from], oldS) || !strings.Contains(steps[to], oldS) {
			common = newS
		}
		tok := mustToken(t, []byte(common), int64(user+1))
		at(from)
		dev := e.Do("GET", "/api/v1/device", "", nil)
		require.Equal(t, http.StatusOK, dev.Status, "%s", dev.Raw)
		cookie := strings.SplitN(dev.Header.Get("Set-Cookie"), ";", 2)[0]
		tk := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/ticket", sess.ID), tok, nil)
		require.Equal(t, http.StatusOK, tk.Status, "%s", tk.Raw)

		at(to)
		what := fmt.Sprintf("made by the API of %q, shown to the API of %q", steps[from], steps[to])
		again := e.Do("GET", "/api/v1/device", "", nil, "Cookie", cookie)
		require.Equal(t, dev.Str("device_id"), again.Str("device_id"), "the device cookie %s keeps its id", what)
		buy := e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil, admission.TicketHeader, tk.Str("ticket"), "Cookie", cookie)
		require.Equal(t, http.StatusAccepted, buy.Status, "the ticket and cookie %s: %s", what, buy.Raw)
		e.WaitStatus(tok, buy.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
		orders = append(orders, buy.Str("order_no"))
	}
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, sess.TotalStock-len(orders), rep.RedisStock)

	// A cookie of a secret no longer in the list is not this shop's.
	at(len(steps) - 1)
	stale := e.Do("GET", "/api/v1/device", "", nil)
	at(0)
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(99), nil,
		"Cookie", strings.SplitN(stale.Header.Get("Set-Cookie"), ";", 2)[0]), 400, seckill.EINVALID, admission.DeviceCookie)
}
