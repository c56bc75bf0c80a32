package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/client"
)

// client is shared by every test: keep-alive connections to the loopback API.
var httpClient = client.NewHTTPClient(30 * time.Second)

// Response is a decoded API answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// OrdersPath is where a shopper buys in a session.
func OrdersPath(sessionID int64) string { return fmt.Sprintf("/api/v1/sessions/%d/orders", sessionID) }

// BuyWithKey buys qty units for user with an Idempotency-Key.
func (e *Env) BuyWithKey(sessionID, user int64, key string, qty int) *Response {
	return e.Do("POST", OrdersPath(sessionID), e.Token(user), map[string]int{"quantity": qty}, api.HeaderIdempotencyKey, key)
}

// KeyAt is a UUIDv7 Idempotency-Key stamped at (admission.KeyTime), as the
// shop page makes them.
func KeyAt(at time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := at.UnixMilli()
	for i := 5; i >= 0; i-- {
		u[i] = byte(ms)
		ms >>= 8
	}
	return u.String()
}

// RequireError fails t unless r is an error of the API's one shape with
// this status and code, a message containing msgPart, and a trace id that
// the answer's X-Request-ID names (unless the request sent its own, which
// the answer echoes).
func RequireError(t testing.TB, r *Response, status int, code, msgPart string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Raw)
	require.Equal(t, code, r.Str("code"), "%s", r.Raw)
	require.Contains(t, r.Str("message"), msgPart)
	require.Regexp(t, "^[0-9a-f]{32}$", r.Str("trace_id"))
	if id := r.Header.Get("X-Request-ID"); traceShaped.MatchString(id) {
		require.Equal(t, r.Str("trace_id"), id)
	}
}

// traceShaped is a trace id as the API writes one.
var traceShaped = regexp.MustCompile("^[0-9a-f]{32}$")

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
	resp, err := e.http.Do(req)
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

// Client returns a client of the Env's API with the admin token and the
// webhook secret; Shopper one that acts as a user.
func (e *Env) Client() *client.Client {
	return &client.Client{BaseURL: e.BaseURL, HTTP: e.http, AdminToken: AdminToken, WebhookSecret: WebhookSecret}
}

// OperatorToken makes a named operator token of role in the Env's
// database, as `seckill operators add` does, and returns it; the same
// name again is the same token.
func (e *Env) OperatorToken(name string, role seckill.Role) string {
	e.T.Helper()
	e.operatorsMu.Lock()
	defer e.operatorsMu.Unlock()
	if tok, ok := e.operators[name]; ok {
		return tok
	}
	tok, hash, err := seckill.NewOperatorToken()
	if err != nil {
		e.T.Fatal(err)
	}
	if err := e.DB.AddOperator(context.Background(), name, role, hash); err != nil {
		e.T.Fatalf("operator %s: %v", name, err)
	}
	if e.operators == nil {
		e.operators = map[string]string{}
	}
	e.operators[name] = tok
	return tok
}

// Operator returns a client of the Env's admin API authenticated as a new
// named operator of role.
func (e *Env) Operator(name string, role seckill.Role) *client.Client {
	cl := e.Client()
	cl.AdminToken = e.OperatorToken(name, role)
	return cl
}

// Shopper returns a client of the Env's API signed in as user.
func (e *Env) Shopper(user int64) *client.Client { return e.Client().WithToken(e.Token(user)) }

// response turns a client call's outcome into a Response: the answer's
// status and headers, and for an error answer its body.
func (e *Env) response(m client.Meta, err error) *Response {
	e.T.Helper()
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		m = ce.Meta
		body := seckill.ErrorBody{Code: ce.Err.Code, Message: ce.Err.Message, TraceID: ce.TraceID}
		raw := ce.Body
		if raw == nil {
			raw, _ = json.Marshal(body)
		}
		return &Response{Status: m.StatusCode, Header: m.Header, Raw: raw,
			Body: map[string]any{"code": body.Code, "message": body.Message, "trace_id": body.TraceID}}
	case err != nil:
		e.T.Errorf("%v", err)
		return &Response{}
	}
	return &Response{Status: m.StatusCode, Header: m.Header, Body: map[string]any{}}
}

// Pay sends a correctly signed webhook for an order.
func (e *Env) Pay(orderNo, paymentID, eventID string, amountCents int64) *Response {
	e.T.Helper()
	return e.response(e.Client().Pay(context.Background(), seckill.Payment{
		EventID: eventID, PaymentID: paymentID, OrderNo: orderNo, AmountCents: amountCents}))
}

// WaitStatus polls an order through the API until it has one of want, and
// returns the status it reached.
func (e *Env) WaitStatus(token, orderNo string, timeout time.Duration, want ...seckill.Status) seckill.Status {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o, err := e.Client().WithToken(token).WaitOrder(ctx, orderNo, want...)
	if err != nil {
		e.T.Fatalf("%v", err)
	}
	return o.Status
}
