package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/signature"
)

// Session returns a session with its remaining stock and state (public).
func (c *Client) Session(ctx context.Context, id int64) (*seckill.SessionView, error) {
	var v seckill.SessionView
	if err := c.get(ctx, "/api/v1/sessions/"+strconv.FormatInt(id, 10), "", &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Sessions returns the sessions not yet ended, soonest first (public).
func (c *Client) Sessions(ctx context.Context) ([]*seckill.SessionView, error) {
	var v struct {
		Sessions []*seckill.SessionView `json:"sessions"`
	}
	if err := c.get(ctx, "/api/v1/sessions", "", &v); err != nil {
		return nil, err
	}
	return v.Sessions, nil
}

// BuyOptions are a purchase's optional parts.
type BuyOptions struct {
	// Quantity is the units to buy; 0 sends none (the API's default, 1).
	Quantity int
	// SKUID is the item to buy: required in a sale of several items.
	SKUID int64
	// IdempotencyKey makes retries safe: the same key (same shopper,
	// session and quantity) always gets the same answer and order number.
	// Retry an UNAVAILABLE answer or a lost one with it.
	IdempotencyKey string
	// Ticket is the purchase ticket of a session that requires one.
	Ticket string
}

// Accepted is a 202 answer about an order: a purchase (always QUEUED),
// a cancel, a dev payment.
type Accepted struct {
	OrderNo string         `json:"order_no"`
	Status  seckill.Status `json:"status"`
	Meta    `json:"-"`
}

// Buy places an order in a session as the client's shopper. Refusals are
// errors with the API's code: SOLD_OUT, LIMIT_EXCEEDED, NOT_STARTED,
// ENDED, RATE_LIMITED, IDEMPOTENCY_MISMATCH (the key was used with another
// quantity), UNAVAILABLE (the outcome is not known: retry with the same
// key after the error's RetryAfter). The answer's Meta tells the layer
// that decided. X-Request-ID comes from the context (WithRequestID).
func (c *Client) Buy(ctx context.Context, sessionID int64, o BuyOptions) (*Accepted, error) {
	r := request{method: http.MethodPost, path: fmt.Sprintf("/api/v1/sessions/%d/orders", sessionID),
		auth: c.Token, header: http.Header{}}
	if o.Quantity != 0 || o.SKUID != 0 {
		body := map[string]int64{}
		if o.Quantity != 0 {
			body["quantity"] = int64(o.Quantity)
		}
		if o.SKUID != 0 {
			body["sku_id"] = o.SKUID
		}
		r.body = body
	}
	if o.IdempotencyKey != "" {
		r.header.Set(HeaderIdempotencyKey, o.IdempotencyKey)
	}
	if o.Ticket != "" {
		r.header.Set(HeaderTicket, o.Ticket)
	}
	return c.accepted(ctx, r)
}

// Order returns one of the shopper's orders (anyone else's is NOT_FOUND).
func (c *Client) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	o, _, err := c.order(ctx, orderNo)
	return o, err
}

// order is Order with its answer's Meta (a QUEUED order's Retry-After).
func (c *Client) order(ctx context.Context, orderNo string) (*seckill.Order, Meta, error) {
	var o seckill.Order
	m, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/orders/" + url.PathEscape(orderNo), auth: c.Token, out: &o})
	if err != nil {
		return nil, m, err
	}
	return &o, m, nil
}

// OrderPage is one page of the shopper's orders, newest first; NextCursor
// is empty on the last page.
type OrderPage struct {
	Orders     []seckill.Order `json:"orders"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// Orders lists the shopper's orders newest first, limit a page (0: the
// API's default), from cursor ("" for the first page). An order is listed
// once its row exists (within a second of the 202).
func (c *Client) Orders(ctx context.Context, cursor string, limit int) (*OrderPage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/v1/orders"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p OrderPage
	if err := c.get(ctx, path, c.Token, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DefaultPollInterval is WaitOrder's pause between two polls when the
// client's PollInterval is 0.
const DefaultPollInterval = 50 * time.Millisecond

// WaitOrder polls one of the shopper's orders, every PollInterval or, on a
// QUEUED order, after the wait its answer asks for (Retry-After: the line
// of orders still to create), until its status is one of want, and
// returns it. Errors on the way (the order not visible yet, an API
// restarting) are polled through; when ctx ends first, the error says the
// last status or error seen.
func (c *Client) WaitOrder(ctx context.Context, orderNo string, want ...seckill.Status) (*seckill.Order, error) {
	var last error
	var lastStatus seckill.Status
	every := c.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		o, m, err := c.order(ctx, orderNo)
		next := every
		if err == nil {
			lastStatus = o.Status
			if slices.Contains(want, o.Status) {
				return o, nil
			}
			next = max(every, m.RetryAfter())
		}
		last = err
		t.Reset(next)
		select {
		case <-ctx.Done():
			if last != nil {
				return nil, fmt.Errorf("order %s (last status %q) never reached %v: %w (last answer: %v)", orderNo, lastStatus, want, ctx.Err(), last)
			}
			return nil, fmt.Errorf("order %s still %s, never reached %v: %w", orderNo, lastStatus, want, ctx.Err())
		case <-t.C:
		}
	}
}

// Cancel asks to cancel one of the shopper's unpaid orders: 202 with the
// status it had; CONFLICT when it is paid, closed, or not cancellable yet.
func (c *Client) Cancel(ctx context.Context, orderNo string) (*Accepted, error) {
	return c.accepted(ctx, request{method: http.MethodPost, path: "/api/v1/orders/" + url.PathEscape(orderNo) + "/cancel", auth: c.Token})
}

// accepted sends r, whose answer is an Accepted (a purchase, a cancel),
// and keeps the answer's Meta on it.
func (c *Client) accepted(ctx context.Context, r request) (*Accepted, error) {
	var a Accepted
	r.out = &a
	m, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	a.Meta = m
	return &a, nil
}

// Checkout opens (or finds again) the payment provider's payment of one
// of the shopper's orders: where to pay it, and until when. CONFLICT once
// the order can no longer be paid.
func (c *Client) Checkout(ctx context.Context, orderNo string) (*seckill.Checkout, error) {
	var co seckill.Checkout
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/orders/" + url.PathEscape(orderNo) + "/payment",
		auth: c.Token, body: struct{}{}, out: &co}); err != nil {
		return nil, err
	}
	co.OrderNo = orderNo
	return &co, nil
}

// PaySandbox pays at a sandbox checkout page (checkout_url of a sandbox
// payment) as the shopper's click does; with lose the sandbox keeps the
// payment's webhook to itself (a drill of a lost webhook). It returns the
// page's status: 200 paid, 409 no longer payable.
func (c *Client) PaySandbox(ctx context.Context, checkoutURL string, lose bool) (int, error) {
	action := "pay"
	if lose {
		action = "lose"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, checkoutURL, strings.NewReader("action="+action))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Ticket is a purchase ticket for a session that requires one.
type Ticket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Ticket asks for the shopper's purchase ticket of a session (send it
// with BuyOptions.Ticket).
func (c *Client) Ticket(ctx context.Context, sessionID int64) (*Ticket, error) {
	var t Ticket
	if err := c.post(ctx, fmt.Sprintf("/api/v1/sessions/%d/ticket", sessionID), c.Token, nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// PaymentBody is the provider's webhook body for a captured payment:
// {"event_id", "payment_id", "order_no", "amount_cents", "currency" (when
// known), "status": "SUCCEEDED"}. An empty EventID becomes "evt_" +
// PaymentID.
func PaymentBody(p seckill.Payment) []byte {
	if p.EventID == "" {
		p.EventID = "evt_" + p.PaymentID
	}
	b, _ := json.Marshal(struct {
		EventID     string `json:"event_id"`
		PaymentID   string `json:"payment_id"`
		OrderNo     string `json:"order_no"`
		AmountCents int64  `json:"amount_cents"`
		Currency    string `json:"currency,omitempty"`
		Status      string `json:"status"`
	}{p.EventID, p.PaymentID, p.OrderNo, p.AmountCents, p.Currency, "SUCCEEDED"})
	return b
}

// Pay sends the payment provider's webhook for a captured payment, signed
// with WebhookSecret (signature.Sign). Replays (same event or payment
// id) succeed and change nothing; AMOUNT_MISMATCH when the amount (or the
// currency, if given) is not the order's (the payment is then recorded
// for its refund), NOT_FOUND for an unknown order.
func (c *Client) Pay(ctx context.Context, p seckill.Payment) (Meta, error) {
	return c.Webhook(ctx, PaymentBody(p))
}

// Webhook sends a raw webhook body signed with WebhookSecret now.
func (c *Client) Webhook(ctx context.Context, body []byte) (Meta, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	h := http.Header{}
	h.Set(signature.Header, signature.Sign(c.WebhookSecret, now(), body))
	return c.do(ctx, request{method: http.MethodPost, path: "/api/v1/payments/webhook", body: body, header: h})
}

// Registration is a shopper's registration for a reserved or draw sale;
// once a draw sale is drawn, a winner's right lasts until RightUntil and a
// waitlisted shopper stands at Position among those still waiting.
type Registration struct {
	Status seckill.RegistrationStatus `json:"status"`
	// SKUID is the item registered for, in a sale of several items.
	SKUID        int64     `json:"sku_id,omitempty"`
	RegisteredAt time.Time `json:"registered_at,omitzero"`
	RightUntil   time.Time `json:"right_until,omitzero"`
	Position     int       `json:"position,omitempty"`
	// InList says, once a draw's list is published (nil before), whether
	// the registration is in it (made before register_until).
	InList *bool `json:"in_list,omitempty"`
	// Created is true for the request that registered (201), false for a
	// registration that already held (200).
	Created bool `json:"-"`
}

// Register registers the shopper for a reserved or draw sale, in its window
// (CONFLICT outside it, or for a first-come sale), for the item skuID
// (required in a sale of several items, 0 otherwise). Idempotent.
func (c *Client) Register(ctx context.Context, sessionID, skuID int64) (*Registration, error) {
	var r Registration
	body := map[string]int64{}
	if skuID != 0 {
		body["sku_id"] = skuID
	}
	m, err := c.do(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/api/v1/sessions/%d/registrations", sessionID),
		auth: c.Token, body: body, out: &r})
	if err != nil {
		return nil, err
	}
	r.Created = m.StatusCode == http.StatusCreated
	return &r, nil
}

// Registration is the shopper's registration for a sale (NOT_FOUND: none).
func (c *Client) Registration(ctx context.Context, sessionID int64) (*Registration, error) {
	var r Registration
	if err := c.get(ctx, fmt.Sprintf("/api/v1/sessions/%d/registration", sessionID), c.Token, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
