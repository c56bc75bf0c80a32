package risk_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/risk"
	"github.com/seckill/seckill/signature"
)

// The client reads a verdict, verifies nothing it cannot, and calls any
// other answer an error (no answer: the API fails open or closed). Its
// requests are signed with the webhook scheme when it has a secret.
func TestClientAnswers(t *testing.T) {
	secret := []byte("risk-secret")
	cases := []struct {
		status int
		body   string
		want   seckill.RiskVerdict
		err    string
	}{
		{200, `{"allow":true}`, seckill.RiskVerdict{Allow: true}, ""},
		{200, `{"allow":false,"reason":"velocity"}`, seckill.RiskVerdict{Reason: "velocity"}, ""},
		{200, `{"reason":"no verdict"}`, seckill.RiskVerdict{}, "not {\"allow\": bool}"},
		{200, `not json`, seckill.RiskVerdict{}, "not {\"allow\": bool}"},
		{500, `boom`, seckill.RiskVerdict{}, "500"},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if err := signature.Verify(secret, r.Header.Get(signature.Header), body, time.Now()); err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		cl := &risk.Client{URL: srv.URL, Secret: secret}
		v, err := cl.Check(context.Background(), seckill.RiskQuery{SessionID: 1, UserID: 2, IP: "127.0.0.1"})
		srv.Close()
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.body)
			continue
		}
		require.NoError(t, err, c.body)
		require.Equal(t, c.want, v)
	}

	// A redirect is not followed, whatever the client's own CheckRedirect:
	// the signed check would go on elsewhere. The error says where to.
	var landed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		landed.Add(1)
		_, _ = w.Write([]byte(`{"allow":true}`))
	}))
	defer target.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		moved := httptest.NewServer(http.RedirectHandler(target.URL+"/check", code))
		cl := &risk.Client{URL: moved.URL, Secret: secret, HTTP: &http.Client{}}
		_, err := cl.Check(context.Background(), seckill.RiskQuery{SessionID: 1, UserID: 2})
		moved.Close()
		require.ErrorContains(t, err, fmt.Sprintf("answered %d, a redirect to %s/check", code, target.URL))
		require.ErrorContains(t, err, "SECKILL_RISK_URL must be the address")
	}
	require.Zero(t, landed.Load(), "a check reached the redirect's target")

	// Past its deadline: an error, whatever comes later.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		_, _ = w.Write([]byte(`{"allow":false}`))
	}))
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := (&risk.Client{URL: slow.URL}).Check(ctx, seckill.RiskQuery{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
