package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/seckill/seckill"
)

// Changed is the answer to an operator's change of a session.
type Changed struct {
	// Applied is false when the ledger already held the change's request
	// id (a retry): nothing was applied again.
	Applied bool                `json:"applied"`
	Session seckill.SessionView `json:"session"`
	// RedisStock is the live stock after an AddStock (-1: not preheated).
	RedisStock *int `json:"redis_stock,omitempty"`
}

// ChangeOptions make a change safe to retry. Who asks is the operator of
// the client's AdminToken: the audit records that, not what we say.
type ChangeOptions struct {
	// RequestID makes the change idempotent: the same id applies it once.
	// Empty: the request's own id (a retry is then a new change).
	RequestID string
}

func (o ChangeOptions) header() http.Header {
	h := http.Header{}
	if o.RequestID != "" {
		h.Set(HeaderIdempotencyKey, o.RequestID)
	}
	return h
}

func (c *Client) change(ctx context.Context, sessionID int64, method, verb string, body any, o ChangeOptions) (*Changed, error) {
	path := fmt.Sprintf("/admin/v1/sessions/%d", sessionID)
	if verb != "" {
		path += "/" + verb
	}
	var out Changed
	if _, err := c.do(ctx, request{method: method, path: path, auth: c.AdminToken, body: body, header: o.header(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// PauseSession stops new orders of a session (423 PAUSED on every API
// within a second); payments, timeouts and cancellations go on.
func (c *Client) PauseSession(ctx context.Context, sessionID int64, o ChangeOptions) (*Changed, error) {
	return c.change(ctx, sessionID, http.MethodPost, "pause", nil, o)
}

// ResumeSession lets orders in again after a pause.
func (c *Client) ResumeSession(ctx context.Context, sessionID int64, o ChangeOptions) (*Changed, error) {
	return c.change(ctx, sessionID, http.MethodPost, "resume", nil, o)
}

// EndSession ends the sale now: 410 ENDED from then on.
func (c *Client) EndSession(ctx context.Context, sessionID int64, o ChangeOptions) (*Changed, error) {
	return c.change(ctx, sessionID, http.MethodPost, "end", nil, o)
}

// AddStock adds units to a live or upcoming sale, in MySQL and Redis; the
// sold-out flag lifts on every API within a second.
func (c *Client) AddStock(ctx context.Context, sessionID int64, units int, o ChangeOptions) (*Changed, error) {
	return c.AddItemStock(ctx, sessionID, 0, units, o)
}

// AddItemStock is AddStock to one item of a sale of several (skuID 0: a
// single-SKU sale's).
func (c *Client) AddItemStock(ctx context.Context, sessionID, skuID int64, units int, o ChangeOptions) (*Changed, error) {
	body := map[string]int64{"add": int64(units)}
	if skuID != 0 {
		body["sku_id"] = skuID
	}
	return c.change(ctx, sessionID, http.MethodPost, "stock", body, o)
}

// UpdateSession changes a session that has not started (CONFLICT once it
// has): only u's non-nil fields.
func (c *Client) UpdateSession(ctx context.Context, sessionID int64, u *seckill.SessionUpdate, o ChangeOptions) (*Changed, error) {
	return c.change(ctx, sessionID, http.MethodPatch, "", u, o)
}

// SessionAudit returns the session's audit ledger, oldest first.
func (c *Client) SessionAudit(ctx context.Context, sessionID int64) ([]seckill.SessionChange, error) {
	var out struct {
		Changes []seckill.SessionChange `json:"changes"`
	}
	if err := c.get(ctx, fmt.Sprintf("/admin/v1/sessions/%d/audit", sessionID), c.AdminToken, &out); err != nil {
		return nil, err
	}
	return out.Changes, nil
}

// Refunded is the answer to an operator's refund of an order.
type Refunded struct {
	OrderNo string         `json:"order_no"`
	Status  seckill.Status `json:"status"`
	// Applied is false for a retry of a refund already made.
	Applied bool `json:"applied"`
}

// RefundOrder refunds a PAID order (POST /admin/v1/orders/{no}/refund):
// REFUND_PENDING now, REFUNDED once the provider gave the money back.
// o.RequestID is required: the same id is one refund however often sent.
func (c *Client) RefundOrder(ctx context.Context, orderNo, reason string, o ChangeOptions) (*Refunded, error) {
	var out Refunded
	if _, err := c.do(ctx, request{method: http.MethodPost, path: "/admin/v1/orders/" + url.PathEscape(orderNo) + "/refund",
		auth: c.AdminToken, body: map[string]string{"reason": reason}, header: o.header(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
