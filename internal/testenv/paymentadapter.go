package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/signature"
)

// The calls of the payment adapter protocol (package paymenthttp,
// docs/payment-http.md), as PaymentAdapter.Calls counts them.
const (
	CallOpen   = "open"   // POST <URL>/payments
	CallQuery  = "query"  // POST <URL>/payments/query
	CallCancel = "cancel" // POST <URL>/payments/cancel
	CallRefund = "refund" // POST <RefundURL>
)

// PaymentAdapter is a team's payment adapter as package paymenthttp expects
// it, in memory: it checks each request's signature (401 when wrong) and
// Idempotency-Key (400), opens one payment per order (the same payment_id
// however often it is asked), answers where a payment stands, cancels an
// open one (a paid one stays SUCCEEDED), and refunds a payment once (the
// same refund id however often it is asked). A test pays with Pay, takes it
// down with Down, makes it refuse with Refuse, slows it with Delay, and
// reads what it saw with Refunds, Calls and Payment.
type PaymentAdapter struct {
	// URL is the adapter's payments API (SECKILL_PAYMENT_URL); RefundURL is
	// URL + "/refunds" (SECKILL_PAYMENT_REFUND_URL, or its default).
	URL       string
	RefundURL string
	Secret    []byte
	// Answer, when set, decides the nth refund ask (from 1): a non-empty
	// body is sent with its status instead of refunding. Set it before the
	// first request, or with SetAnswer while requests run.
	Answer func(n int) (status int, body string)
	// WebhookURL and WebhookSecret, when set, make Pay send the payment
	// webhook (POST /api/v1/payments/webhook, signed with WebhookSecret) as
	// a real adapter does. Unset, the payment succeeds with its webhook
	// lost: seckill learns of it only by asking.
	WebhookURL    string
	WebhookSecret []byte

	mu       sync.Mutex
	payments map[string]*adapterPayment // by order number
	canceled map[string]bool            // orders cancelled before any open
	refunds  map[string]seckill.Refund  // by payment id
	calls    map[string]int
	down     bool
	refusal  string
	delay    time.Duration
}

type adapterPayment struct {
	seckill.ProviderPayment
	expiresAt time.Time
}

// paymentWire is the adapter's answer about a payment.
type paymentWire struct {
	PaymentID    string    `json:"payment_id"`
	Status       string    `json:"status"`
	AmountCents  int64     `json:"amount_cents"`
	Currency     string    `json:"currency,omitempty"`
	CheckoutURL  string    `json:"checkout_url,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
}

// StartPaymentAdapter serves a PaymentAdapter on a loopback port until the
// test ends. It needs no other service.
func StartPaymentAdapter(t testing.TB, secret []byte) *PaymentAdapter {
	a := &PaymentAdapter{Secret: secret, payments: map[string]*adapterPayment{}, canceled: map[string]bool{},
		refunds: map[string]seckill.Refund{}, calls: map[string]int{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	a.RefundURL = srv.URL + "/refunds"
	return a
}

// SetAnswer replaces Answer while requests may be running.
func (a *PaymentAdapter) SetAnswer(f func(n int) (status int, body string)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.Answer = f
}

// Down makes every call answer 503 (true) or be served again (false).
func (a *PaymentAdapter) Down(down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.down = down
}

// Refuse makes every call answer 409 {"message": message}, a refusal for
// good; an empty message serves them again.
func (a *PaymentAdapter) Refuse(message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refusal = message
}

// Delay makes every answer wait d (or until the caller gives up).
func (a *PaymentAdapter) Delay(d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.delay = d
}

// Pay makes the order's payment SUCCEEDED, as the shopper paying at the
// checkout would (an OPEN or PROCESSING one; a paid one stays paid), and
// sends the webhook when WebhookURL is set. It does not check the
// payment's expiry, so a test can pay late.
func (a *PaymentAdapter) Pay(ctx context.Context, orderNo string) (seckill.ProviderPayment, error) {
	a.mu.Lock()
	p, ok := a.payments[orderNo]
	if !ok {
		a.mu.Unlock()
		return seckill.ProviderPayment{}, fmt.Errorf("payment adapter: no payment opened for order %s", orderNo)
	}
	if p.State == seckill.PaymentCanceled {
		a.mu.Unlock()
		return p.ProviderPayment, fmt.Errorf("payment adapter: payment %s of order %s is cancelled", p.PaymentID, orderNo)
	}
	p.State = seckill.PaymentSucceeded
	paid := p.ProviderPayment
	a.mu.Unlock()
	if a.WebhookURL == "" {
		return paid, nil
	}
	return paid, a.notify(ctx, orderNo, paid)
}

// Process makes the order's OPEN payment PROCESSING: money in flight,
// neither paid nor cancellable until Pay.
func (a *PaymentAdapter) Process(orderNo string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.payments[orderNo]
	if !ok || p.State != seckill.PaymentOpen {
		return fmt.Errorf("payment adapter: order %s has no OPEN payment", orderNo)
	}
	p.State = seckill.PaymentProcessing
	return nil
}

// notify sends the payment webhook of a succeeded payment.
func (a *PaymentAdapter) notify(ctx context.Context, orderNo string, p seckill.ProviderPayment) error {
	body := client.PaymentBody(seckill.Payment{PaymentID: p.PaymentID, OrderNo: orderNo, AmountCents: p.AmountCents, Currency: p.Currency})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign(a.WebhookSecret, time.Now(), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("payment adapter: webhook of %s: %w", p.PaymentID, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("payment adapter: webhook of %s answered %d %s", p.PaymentID, resp.StatusCode, answer)
	}
	return nil
}

// Payment is the order's payment as the adapter holds it.
func (a *PaymentAdapter) Payment(orderNo string) (seckill.ProviderPayment, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.payments[orderNo]
	if !ok {
		return seckill.ProviderPayment{}, false
	}
	return p.ProviderPayment, true
}

// Refunds returns the refunds made, by payment id, and how many refund
// asks came (refused, failed and repeated ones included).
func (a *PaymentAdapter) Refunds() (map[string]seckill.Refund, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]seckill.Refund, len(a.refunds))
	for k, v := range a.refunds {
		out[k] = v
	}
	return out, a.calls[CallRefund]
}

// Calls returns how many requests came for each call (CallOpen …), whatever
// they were answered.
func (a *PaymentAdapter) Calls() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.calls))
	for k, v := range a.calls {
		out[k] = v
	}
	return out
}

func (a *PaymentAdapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var call string
	switch r.URL.Path {
	case "/payments":
		call = CallOpen
	case "/payments/query":
		call = CallQuery
	case "/payments/cancel":
		call = CallCancel
	case "/refunds":
		call = CallRefund
	default:
		writeAnswer(w, http.StatusNotFound, map[string]string{"message": "no such call"})
		return
	}
	if r.Method != http.MethodPost {
		writeAnswer(w, http.StatusMethodNotAllowed, map[string]string{"message": "POST only"})
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	a.mu.Lock()
	a.calls[call]++
	n, down, refusal, delay, ans := a.calls[call], a.down, a.refusal, a.delay, a.Answer
	a.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if down {
		http.Error(w, "payment adapter down", http.StatusServiceUnavailable)
		return
	}
	if err := signature.Verify(a.Secret, r.Header.Get(signature.Header), body, time.Now()); err != nil {
		writeAnswer(w, http.StatusUnauthorized, map[string]string{"message": "bad signature"})
		return
	}
	if refusal != "" {
		writeAnswer(w, http.StatusConflict, map[string]string{"message": refusal})
		return
	}
	key := r.Header.Get("Idempotency-Key")
	switch call {
	case CallOpen:
		a.open(w, body, key)
	case CallQuery, CallCancel:
		a.state(w, call, body, key)
	case CallRefund:
		a.refund(w, body, key, n, ans)
	}
}

func (a *PaymentAdapter) open(w http.ResponseWriter, body []byte, key string) {
	var req struct {
		OrderNo     string    `json:"order_no"`
		AmountCents int64     `json:"amount_cents"`
		Currency    string    `json:"currency"`
		ExpiresAt   time.Time `json:"expires_at"`
		TraceID     string    `json:"trace_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.OrderNo == "" || key != req.OrderNo ||
		req.AmountCents <= 0 || req.Currency == "" {
		writeAnswer(w, http.StatusBadRequest, map[string]string{"message": "bad request"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.canceled[req.OrderNo] {
		writeAnswer(w, http.StatusConflict, map[string]string{"message": "the order's payment was cancelled"})
		return
	}
	status := http.StatusOK
	p, ok := a.payments[req.OrderNo]
	switch {
	case !ok:
		p = &adapterPayment{ProviderPayment: seckill.ProviderPayment{PaymentID: "pay_" + paymentNonce(),
			State: seckill.PaymentOpen, AmountCents: req.AmountCents, Currency: req.Currency}, expiresAt: req.ExpiresAt}
		a.payments[req.OrderNo] = p
		status = http.StatusCreated
	case p.AmountCents != req.AmountCents || p.Currency != req.Currency:
		writeAnswer(w, http.StatusConflict, map[string]string{"message": "the order's payment was opened for another amount"})
		return
	case p.State == seckill.PaymentCanceled:
		writeAnswer(w, http.StatusConflict, map[string]string{"message": "the order's payment was cancelled"})
		return
	}
	writeAnswer(w, status, paymentWire{PaymentID: p.PaymentID, Status: string(p.State), AmountCents: p.AmountCents,
		CheckoutURL: a.URL + "/pay/" + p.PaymentID, ClientSecret: "cs_" + p.PaymentID, ExpiresAt: p.expiresAt})
}

// state answers the query and the cancel.
func (a *PaymentAdapter) state(w http.ResponseWriter, call string, body []byte, key string) {
	var req struct {
		OrderNo   string `json:"order_no"`
		PaymentID string `json:"payment_id"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.OrderNo == "" || key != call+":"+req.OrderNo {
		writeAnswer(w, http.StatusBadRequest, map[string]string{"message": "bad request"})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.payments[req.OrderNo]
	if !ok {
		if call == CallCancel {
			// Nothing to cancel, and nothing may open for the order now.
			a.canceled[req.OrderNo] = true
		}
		writeAnswer(w, http.StatusOK, paymentWire{PaymentID: req.PaymentID, Status: string(seckill.PaymentNone)})
		return
	}
	if req.PaymentID != "" && req.PaymentID != p.PaymentID {
		writeAnswer(w, http.StatusUnprocessableEntity, map[string]string{"message": "payment_id is not the order's payment"})
		return
	}
	if call == CallCancel && p.State == seckill.PaymentOpen {
		p.State = seckill.PaymentCanceled
	}
	writeAnswer(w, http.StatusOK, paymentWire{PaymentID: p.PaymentID, Status: string(p.State), AmountCents: p.AmountCents, Currency: p.Currency})
}

func (a *PaymentAdapter) refund(w http.ResponseWriter, body []byte, key string, n int, ans func(int) (int, string)) {
	var ref seckill.Refund
	if err := json.Unmarshal(body, &ref); err != nil || ref.PaymentID == "" || key != ref.PaymentID {
		writeAnswer(w, http.StatusBadRequest, map[string]string{"message": "bad request"})
		return
	}
	if ans != nil {
		if status, msg := ans(n); msg != "" {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(msg))
			return
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// A payment this adapter opened can be refunded up to its amount; one
	// it never saw (paid through another provider in a test) is taken as is.
	for _, p := range a.payments {
		if p.PaymentID == ref.PaymentID && ref.AmountCents > p.AmountCents {
			writeAnswer(w, http.StatusUnprocessableEntity, map[string]string{"message": "amount over the capture"})
			return
		}
	}
	if _, ok := a.refunds[ref.PaymentID]; !ok {
		a.refunds[ref.PaymentID] = ref
	}
	writeAnswer(w, http.StatusOK, map[string]string{"refund_id": "rf_" + ref.PaymentID})
}

func writeAnswer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func paymentNonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
