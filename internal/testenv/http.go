package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
)

// client is shared by every test: keep-alive connections to the loopback API.
var httpClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0},
}

// Response is a decoded API answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Str returns a string field of the body ("" when absent).
func (r *Response) Str(field string) string {
	s, _ := r.Body[field].(string)
	return s
}

// Do sends a request to the Env's API. body may be nil, a []byte or a
// value to marshal; auth is a bearer token ("" for none).
func (e *Env) Do(method, path, auth string, body any, headers ...string) *Response {
	e.T.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.T.Fatalf("marshal: %v", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.BaseURL+path, rd)
	if err != nil {
		e.T.Fatalf("request: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		e.T.Errorf("%s %s: %v", method, path, err)
		return &Response{}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// Pay sends a correctly signed webhook for an order.
func (e *Env) Pay(orderNo, paymentID, eventID string, amountCents int64) *Response {
	e.T.Helper()
	body, _ := json.Marshal(map[string]any{
		"event_id": eventID, "payment_id": paymentID, "order_no": orderNo,
		"amount_cents": amountCents, "status": "SUCCEEDED",
	})
	return e.Do("POST", "/api/v1/payments/webhook", "", body,
		api.HeaderSignature, api.SignWebhook(WebhookSecret, time.Now(), body))
}

// WaitStatus polls an order through the API until it has one of want, and
// returns the status it reached.
func (e *Env) WaitStatus(token, orderNo string, timeout time.Duration, want ...seckill.Status) seckill.Status {
	e.T.Helper()
	var last string
	e.Eventually(timeout, "order "+orderNo+" reaches "+fmt.Sprint(want), func() error {
		r := e.Do("GET", "/api/v1/orders/"+orderNo, token, nil)
		last = r.Str("status")
		for _, w := range want {
			if last == string(w) {
				return nil
			}
		}
		return fmt.Errorf("status %d %s", r.Status, r.Raw)
	})
	return seckill.Status(last)
}
