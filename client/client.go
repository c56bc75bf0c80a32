// Package client is the typed Go client of seckill's HTTP API (see
// DESIGN.md): the public session reads, the shopper's purchase, poll and
// cancel, the payment provider's signed webhook, the admin endpoints and the
// dev-only ones. It mirrors the api package the way a client of a service
// should: one method per endpoint, the domain types of package seckill in
// and out, and every error answer turned back into a *seckill.Error with the
// API's code, so callers branch on seckill.ErrorCode(err) exactly as the
// server does. The HTTP facts that some callers need (status, Retry-After,
// X-Request-ID, the admission layer) stay on *Error and on Meta.
//
//	c := client.New("http://127.0.0.1:8080")
//	c.AdminToken = admin
//	sess, err := c.CreateSession(ctx, &seckill.Session{...})
//	shopper := c.WithToken(token)
//	placed, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{IdempotencyKey: key})
//	switch seckill.ErrorCode(err) { case seckill.ESOLDOUT: … }
//
// It uses only the standard library and never imports the api package, so
// the api's own tests can use it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
)

// DefaultTimeout bounds each request of a client made by New.
const DefaultTimeout = 30 * time.Second

// Headers the client sends or reads.
const (
	HeaderRequestID      = "X-Request-ID"
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTicket         = "X-Seckill-Ticket"
	HeaderLayer          = "X-Seckill-Layer"
	HeaderRetryAfter     = "Retry-After"
)

// Client talks to one seckill API. Its fields are read on every call; set
// them before sharing the client between goroutines (WithToken returns a
// copy for another shopper).
type Client struct {
	// BaseURL is the API's root, e.g. http://127.0.0.1:8080.
	BaseURL string
	// HTTP sends the requests; its Timeout bounds each one.
	HTTP *http.Client
	// Token is the shopper's JWT for the shopper endpoints.
	Token string
	// AdminToken is SECKILL_ADMIN_TOKEN, for the admin endpoints.
	AdminToken string
	// WebhookSecret is SECKILL_WEBHOOK_SECRET: Pay signs with it, as the
	// payment provider does.
	WebhookSecret []byte
	// Now is the signing clock (time.Now when nil).
	Now func() time.Time
	// PollInterval is WaitOrder's pause between polls (DefaultPollInterval
	// when 0).
	PollInterval time.Duration
}

// New returns a client of the API at baseURL with keep-alive connections
// and DefaultTimeout per request.
func New(baseURL string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), HTTP: NewHTTPClient(DefaultTimeout)}
}

// NewHTTPClient returns an http.Client for an API: each request bounded by
// timeout, many keep-alive connections per host (load and drills open
// hundreds), idle ones dropped after 5 s, before the API's own idle timeout
// (10 s) closes them: a request sent on a connection the server is closing
// at that instant would get the server's timeout answer instead of its own.
func NewHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 512, IdleConnTimeout: 5 * time.Second,
	}}
}

// WithToken returns a copy of c that acts as the shopper of token.
func (c *Client) WithToken(token string) *Client {
	cp := *c
	cp.Token = token
	return &cp
}

type requestIDKey struct{}

// WithRequestID returns a context whose requests carry X-Request-ID id.
// The API echoes it (Meta.RequestID) and keeps it on the request's span;
// its logs and error bodies carry the request's trace id (Error.TraceID).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// Meta is what an answer said besides its body.
type Meta struct {
	StatusCode int
	Header     http.Header
}

// RequestID is the answer's X-Request-ID: the one the request sent, else
// the request's trace id.
func (m Meta) RequestID() string { return m.Header.Get(HeaderRequestID) }

// Layer is the admission layer that decided a purchase (X-Seckill-Layer:
// soldout_memory, redis, rate_limit…), "" on other answers.
func (m Meta) Layer() string { return m.Header.Get(HeaderLayer) }

// RetryAfter is how long the API asked to wait (Retry-After on 429 and
// 503), 0 when it did not say.
func (m Meta) RetryAfter() time.Duration {
	v := m.Header.Get(HeaderRetryAfter)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// Error is a non-2xx answer. It unwraps to the *seckill.Error of the
// API's code and message, so seckill.ErrorCode(err) is the API's code.
type Error struct {
	Meta
	Err     *seckill.Error
	TraceID string
	// Body is the raw answer when it was not the API's error shape (a
	// proxy's page); Err's code then comes from the HTTP status.
	Body []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("seckill api: %d %s (trace %s)", e.StatusCode, e.Err.Error(), e.TraceID)
}

// Unwrap returns the API's error.
func (e *Error) Unwrap() error { return e.Err }

// StatusCode returns the HTTP status of err's *Error, 0 when err is not an
// answer of the API (nil, a network error, a timeout).
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// codeOf is the code of an answer that did not carry one: the api's
// status mapping read backwards (a 409 without a body cannot say which
// conflict, so CONFLICT).
var codeOf = map[int]string{
	http.StatusBadRequest:            seckill.EINVALID,
	http.StatusUnauthorized:          seckill.EUNAUTHORIZED,
	http.StatusForbidden:             seckill.EFORBIDDEN,
	http.StatusNotFound:              seckill.ENOTFOUND,
	http.StatusConflict:              seckill.ECONFLICT,
	http.StatusGone:                  seckill.EENDED,
	http.StatusRequestEntityTooLarge: seckill.ETOOLARGE,
	http.StatusUnprocessableEntity:   seckill.EINVALID,
	http.StatusTooEarly:              seckill.ENOTSTARTED,
	http.StatusTooManyRequests:       seckill.ERATELIMITED,
	http.StatusServiceUnavailable:    seckill.EUNAVAILABLE,
	http.StatusBadGateway:            seckill.EUNAVAILABLE,
	http.StatusGatewayTimeout:        seckill.EUNAVAILABLE,
}

func answerError(m Meta, raw []byte) *Error {
	var b seckill.ErrorBody
	if json.Unmarshal(raw, &b) == nil && b.Code != "" {
		return &Error{Meta: m, Err: &seckill.Error{Code: b.Code, Message: b.Message}, TraceID: b.TraceID}
	}
	code, ok := codeOf[m.StatusCode]
	if !ok {
		code = seckill.EINTERNAL
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return &Error{Meta: m, Err: &seckill.Error{Code: code, Message: fmt.Sprintf("HTTP %d: %s", m.StatusCode, msg)},
		TraceID: m.RequestID(), Body: raw}
}

// request is one call: an auth token ("" for none), a JSON body (nil,
// raw []byte, or a value to marshal), extra headers, and where a 2xx
// answer's JSON goes (nil: discarded; a *[]byte takes the raw body).
type request struct {
	method, path, auth string
	body               any
	header             http.Header
	out                any
}

// do sends r and returns the answer's Meta; a non-2xx answer is an *Error,
// a failure to reach the API is the transport's error.
func (c *Client) do(ctx context.Context, r request) (Meta, error) {
	var rd io.Reader
	switch b := r.body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return Meta{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.BaseURL+r.path, rd)
	if err != nil {
		return Meta{}, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.auth != "" {
		req.Header.Set("Authorization", "Bearer "+r.auth)
	}
	if id, _ := ctx.Value(requestIDKey{}).(string); id != "" {
		req.Header.Set(HeaderRequestID, id)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Meta{}, err
	}
	defer resp.Body.Close()
	m := Meta{StatusCode: resp.StatusCode, Header: resp.Header}
	if w, ok := r.out.(io.Writer); ok && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		// A streamed answer (an export) goes on as it comes.
		if _, err := io.Copy(w, resp.Body); err != nil {
			return m, fmt.Errorf("seckill api: %s %s: reading the answer: %w", r.method, r.path, err)
		}
		return m, nil
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return m, fmt.Errorf("seckill api: %s %s: reading the answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return m, answerError(m, raw)
	}
	if p, ok := r.out.(*[]byte); ok {
		*p = raw
	} else if r.out != nil {
		if err := json.Unmarshal(raw, r.out); err != nil {
			return m, fmt.Errorf("seckill api: %s %s: decoding %d answer: %w", r.method, r.path, resp.StatusCode, err)
		}
	}
	return m, nil
}

// get is a GET whose JSON answer goes to out.
func (c *Client) get(ctx context.Context, path, auth string, out any) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: path, auth: auth, out: out})
	return err
}

// post is a POST of body whose JSON answer goes to out.
func (c *Client) post(ctx context.Context, path, auth string, body, out any) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: path, auth: auth, body: body, out: out})
	return err
}
