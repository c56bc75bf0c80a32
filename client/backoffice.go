package client

import (
	"context"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/seckill/seckill"
)

// OrderRecord is an order as an operator sees it: the order, every change
// of its status, its payments, refunds and events, and its workflow in
// Temporal's Web UI when the API knows that UI.
type OrderRecord struct {
	seckill.Order
	History     []seckill.OrderChange   `json:"history"`
	Payments    []seckill.PaymentRecord `json:"payments"`
	Refunds     []seckill.RefundState   `json:"refunds"`
	Events      []seckill.Event         `json:"events"`
	WorkflowURL string                  `json:"workflow_url,omitempty"`
}

// filterQuery is f as the admin order routes' query. Zero is no filter;
// a negative id is sent, for the API to refuse rather than the list to
// grow to every order.
func filterQuery(f seckill.OrderFilter) url.Values {
	q := url.Values{}
	if f.SessionID != 0 {
		q.Set("session_id", strconv.FormatInt(f.SessionID, 10))
	}
	if f.UserID != 0 {
		q.Set("user_id", strconv.FormatInt(f.UserID, 10))
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if !f.From.IsZero() {
		q.Set("from", f.From.UTC().Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// FindOrders lists the orders f picks (viewer and up), newest first, limit
// a page (0: the API's default), from cursor ("" for the first page);
// NextCursor is "" on the last page.
func (c *Client) FindOrders(ctx context.Context, f seckill.OrderFilter, cursor string, limit int) (*OrderPage, error) {
	q := filterQuery(f)
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p OrderPage
	if err := c.get(ctx, "/admin/v1/orders?"+q.Encode(), c.AdminToken, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// OrderRecord returns everything known of one order (viewer and up).
func (c *Client) OrderRecord(ctx context.Context, orderNo string) (*OrderRecord, error) {
	var r OrderRecord
	if err := c.get(ctx, "/admin/v1/orders/"+url.PathEscape(orderNo), c.AdminToken, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ExportOrders copies a sale's orders as CSV (a header row, one row per
// order) to w as the API streams them (viewer and up).
func (c *Client) ExportOrders(ctx context.Context, sessionID int64, w io.Writer) error {
	_, err := c.do(ctx, request{method: "GET", path: "/admin/v1/orders/export?session_id=" + strconv.FormatInt(sessionID, 10),
		auth: c.AdminToken, out: w})
	return err
}
