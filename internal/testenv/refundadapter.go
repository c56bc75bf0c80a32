package testenv

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill"
)

// RefundAdapter is a team's refund adapter as package refundhttp expects
// it: it checks each request's signature and Idempotency-Key, refunds a
// payment once (the same refund id however often it is asked), and answers
// with Answer's status and body instead when Answer returns a body.
type RefundAdapter struct {
	URL    string
	Secret []byte
	// Answer, when set, decides the nth ask (from 1): a non-empty body is
	// sent with its status instead of refunding.
	Answer func(n int) (status int, body string)

	mu      sync.Mutex
	refunds map[string]seckill.Refund
	asks    int
}

// StartRefundAdapter serves a RefundAdapter until the test ends.
func StartRefundAdapter(t testing.TB, secret []byte) *RefundAdapter {
	a := &RefundAdapter{Secret: secret, refunds: map[string]seckill.Refund{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL + "/refunds"
	return a
}

func (a *RefundAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := seckill.VerifyWebhook(a.Secret, r.Header.Get("Seckill-Signature"), body, time.Now()); err != nil {
		http.Error(w, `{"message":"bad signature"}`, http.StatusUnauthorized)
		return
	}
	var ref seckill.Refund
	if err := json.Unmarshal(body, &ref); err != nil || r.Header.Get("Idempotency-Key") != ref.PaymentID {
		http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asks++
	if a.Answer != nil {
		if status, msg := a.Answer(a.asks); msg != "" {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(msg))
			return
		}
	}
	if _, ok := a.refunds[ref.PaymentID]; !ok {
		a.refunds[ref.PaymentID] = ref
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"refund_id": "rf_" + ref.PaymentID})
}

// Refunds returns the refunds made, by payment id, and how many asks came.
func (a *RefundAdapter) Refunds() (map[string]seckill.Refund, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]seckill.Refund, len(a.refunds))
	for k, v := range a.refunds {
		out[k] = v
	}
	return out, a.asks
}
