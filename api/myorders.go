package api

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
)

// OrderHistory pages through a shopper's orders, newest first.
type OrderHistory interface {
	UserOrders(ctx context.Context, userID, before int64, limit int) ([]*seckill.Order, int64, error)
}

// Page sizes of GET /api/v1/orders.
const (
	defaultOrdersPage = 20
	maxOrdersPage     = 100
)

// ordersCursor encodes where the next page starts. Opaque to clients (its
// shape may change); only this API reads it back.
func ordersCursor(rowID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.FormatInt(rowID, 10)))
}

func parseOrdersCursor(raw string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil {
		if s, ok := strings.CutPrefix(string(b), "o"); ok {
			if id, err := strconv.ParseInt(s, 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, seckill.Errorf(seckill.EINVALID, "cursor is not one this API returned (pass next_cursor as it came)")
}

// queryLimit is the ?limit= of a page: def when absent, else an integer
// from 1 to most.
func queryLimit(c *fiber.Ctx, def, most int) (int, error) {
	raw := c.Query("limit")
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > most {
		return 0, seckill.Errorf(seckill.EINVALID, "limit must be an integer between 1 and %d", most)
	}
	return n, nil
}

// listOrders: GET /api/v1/orders[?limit=N&cursor=C], the signed-in
// shopper's orders newest first, from MySQL: an order appears once its row
// exists (within a second of the 202, while it is QUEUED it is not listed
// yet). next_cursor is absent on the last page.
func (s *Server) listOrders(c *fiber.Ctx) error {
	limit, err := queryLimit(c, defaultOrdersPage, maxOrdersPage)
	if err != nil {
		return err
	}
	before, err := queryCursor(c)
	if err != nil {
		return err
	}
	orders, next, err := s.svc.History.UserOrders(c.UserContext(), userID(c), before, limit)
	if err != nil {
		return err
	}
	return sendOrderPage(c, orders, next)
}

// queryCursor is the ?cursor= of an order list (0: the first page).
func queryCursor(c *fiber.Ctx) (int64, error) {
	if raw := c.Query("cursor"); raw != "" {
		return parseOrdersCursor(raw)
	}
	return 0, nil
}

// sendOrderPage answers a page of an order list: {orders, next_cursor},
// next_cursor absent on the last page (next 0).
func sendOrderPage(c *fiber.Ctx, orders []*seckill.Order, next int64) error {
	out := struct {
		Orders     []orderJSON `json:"orders"`
		NextCursor string      `json:"next_cursor,omitempty"`
	}{Orders: make([]orderJSON, len(orders))}
	for i, o := range orders {
		out.Orders[i] = orderJSON{Order: o}
	}
	if next > 0 {
		out.NextCursor = ordersCursor(next)
	}
	return c.JSON(out)
}
