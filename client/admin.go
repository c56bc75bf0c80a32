package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/seckill/seckill"
)

// CreateSession creates a sale (admin) from s's SKU, title, price, total
// stock (or its Items, for a sale of several), per-user limit, window,
// ticket and captcha requirements, and mode (with a reserved or draw
// sale's registration window and a draw's right ttl); s.ID is ignored.
// The answer is the new session with its id.
func (c *Client) CreateSession(ctx context.Context, s *seckill.Session) (*seckill.SessionView, error) {
	var v seckill.SessionView
	if err := c.post(ctx, "/admin/v1/sessions", c.AdminToken, seckill.DefinitionOf(s), &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Preheated is the answer to a preheat.
type Preheated struct {
	Stock int `json:"stock"`
	// Rebuilt and Reservations: a forced preheat rebuilt Redis from MySQL
	// with that many live holdings.
	Rebuilt      bool `json:"rebuilt"`
	Reservations int  `json:"reservations"`
}

// Preheat loads a session's stock into Redis (admin). Idempotent: live
// stock is never overwritten unless force, which rebuilds Redis from MySQL.
// CONFLICT for a session with orders but no Redis state (use force).
func (c *Client) Preheat(ctx context.Context, sessionID int64, force bool) (*Preheated, error) {
	path := fmt.Sprintf("/admin/v1/sessions/%d/preheat", sessionID)
	if force {
		path += "?force=true"
	}
	var p Preheated
	if err := c.post(ctx, path, c.AdminToken, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Reconcile returns a session's reconcile report (admin): OK is false on
// drift, broken invariants, stuck orders or lost Redis state.
func (c *Client) Reconcile(ctx context.Context, sessionID int64) (*seckill.Report, error) {
	var r seckill.Report
	if err := c.get(ctx, fmt.Sprintf("/admin/v1/sessions/%d/reconcile", sessionID), c.AdminToken, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Repair corrects a session's Redis state from MySQL when that is safe
// (admin, POST /admin/v1/sessions/{id}/repair) and returns the report after it and what
// changed.
func (c *Client) Repair(ctx context.Context, sessionID int64) (*seckill.Report, *seckill.Repair, error) {
	var v struct {
		*seckill.Report
		Repair *seckill.Repair `json:"repair"`
	}
	v.Report = &seckill.Report{}
	if err := c.post(ctx, fmt.Sprintf("/admin/v1/sessions/%d/repair", sessionID), c.AdminToken, nil, &v); err != nil {
		return nil, nil, err
	}
	return v.Report, v.Repair, nil
}

// Block stops a user from buying (admin), on every API within a second.
func (c *Client) Block(ctx context.Context, userID int64) error {
	_, err := c.do(ctx, request{method: http.MethodPut, path: fmt.Sprintf("/admin/v1/blocklist/%d", userID), auth: c.AdminToken})
	return err
}

// Unblock lets a blocked user buy again (admin).
func (c *Client) Unblock(ctx context.Context, userID int64) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: fmt.Sprintf("/admin/v1/blocklist/%d", userID), auth: c.AdminToken})
	return err
}

// DevToken is the answer of the dev-only token endpoint.
type DevToken struct {
	Token     string    `json:"token"`
	UserID    int64     `json:"user_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// DevToken asks `seckill dev` for a shopper token of any user (dev only:
// NOT_FOUND on `seckill api`).
func (c *Client) DevToken(ctx context.Context, userID int64) (*DevToken, error) {
	var t DevToken
	if err := c.post(ctx, "/dev/v1/token", "", map[string]int64{"user_id": userID}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Healthy returns nil when the API process answers /healthz.
func (c *Client) Healthy(ctx context.Context) error { return c.get(ctx, "/healthz", "", nil) }

// Ready returns nil when the API and its dependencies (MySQL, Redis,
// Temporal) answer /readyz; UNAVAILABLE names the one that is down.
func (c *Client) Ready(ctx context.Context) error { return c.get(ctx, "/readyz", "", nil) }

// Metrics returns the API's Prometheus text.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	var raw []byte
	if err := c.get(ctx, "/metrics", "", &raw); err != nil {
		return "", err
	}
	return string(raw), nil
}
