package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// A deployment mid-rotation, configured as an operator would
// (comma-separated secrets, the shop login's JWKS): shoppers buy with a
// token of the new secret, of the old one and of the shop's own login
// service; the provider's webhooks verify under the old and the new
// secret; anything else is refused, and the sale's invariants hold.
func TestSecretsRotateWithoutDowntime(t *testing.T) {
	idp := testenv.NewIdP(t)
	idp.AddRSA("login-1")
	newJWT, newHook := []byte("jwt-secret-2026-12"), []byte("webhook-secret-2026-12")
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
