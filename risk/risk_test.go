package risk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
