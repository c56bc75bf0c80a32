package api

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/orders"
)

// OrderRecords are the operators' reads of orders: a filtered list, newest
// first, and everything known of one order.
type OrderRecords interface {
	FindOrders(ctx context.Context, f seckill.OrderFilter, before int64, limit int) ([]*seckill.Order, int64, error)
	OrderRecord(ctx context.Context, orderNo string) (*seckill.OrderRecord, error)
}

// Page sizes of GET /admin/v1/orders, and the page the export reads at a
// time: what bounds its memory, however many orders the sale has.
const (
	defaultAdminOrdersPage = 100
	maxAdminOrdersPage     = 1000
	defaultExportPage      = 1000
)

// orderFilters are the query parameters orderFilter decodes.
var orderFilters = []string{"session_id", "user_id", "status", "from", "to"}

// orderFilter decodes ?session_id=&user_id=&status=&from=&to= (times
// RFC 3339; from inclusive, to exclusive).
func orderFilter(c *fiber.Ctx) (seckill.OrderFilter, error) {
	var f seckill.OrderFilter
	args := c.Context().QueryArgs()
	for _, name := range orderFilters { // ?user_id= filters nothing: it must not list every order
		if args.Has(name) && len(args.Peek(name)) == 0 {
			return f, seckill.Errorf(seckill.EINVALID, "%s is empty: give it a value or leave it out", name)
		}
	}
	for name, dst := range map[string]*int64{"session_id": &f.SessionID, "user_id": &f.UserID} {
		if raw := c.Query(name); raw != "" {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || n < 1 {
				return f, seckill.Errorf(seckill.EINVALID, "%s must be a positive integer", name)
			}
			*dst = n
		}
	}
	if raw := c.Query("status"); raw != "" {
		if !slices.Contains(seckill.Statuses, seckill.Status(raw)) {
			return f, seckill.Errorf(seckill.EINVALID, "status must be one of %v", seckill.Statuses)
		}
		f.Status = seckill.Status(raw)
	}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if raw := c.Query(name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				return f, seckill.Errorf(seckill.EINVALID, "%s must be an RFC 3339 time (2026-01-02T15:04:05Z)", name)
			}
			*dst = t
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.From.After(f.To) {
		return f, seckill.Errorf(seckill.EINVALID, "from is after to")
	}
	return f, nil
}

// adminOrders: GET /admin/v1/orders[?session_id=&user_id=&status=&from=&to=&limit=&cursor=],
// the orders newest first, paged like the shopper's list (an opaque
// cursor; next_cursor absent on the last page).
func (s *Server) adminOrders(c *fiber.Ctx) error {
	f, err := orderFilter(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, defaultAdminOrdersPage, maxAdminOrdersPage)
	if err != nil {
		return err
	}
	before, err := queryCursor(c)
	if err != nil {
		return err
	}
	orders, next, err := s.svc.Backoffice.FindOrders(c.UserContext(), f, before, limit)
	if err != nil {
		return err
	}
	return sendOrderPage(c, orders, next)
}

// adminOrder: GET /admin/v1/orders/{order_no}, the order with its history,
// payments, refunds and events, and its workflow in Temporal's Web UI when
// Config.WorkflowLink is set.
func (s *Server) adminOrder(c *fiber.Ctx) error {
	rec, err := s.svc.Backoffice.OrderRecord(c.UserContext(), c.Params("order_no"))
	if err != nil {
		return err
	}
	out := struct {
		orderJSON
		History     []seckill.OrderChange   `json:"history"`
		Payments    []seckill.PaymentRecord `json:"payments"`
		Refunds     []seckill.RefundState   `json:"refunds"`
		Events      []seckill.Event         `json:"events"`
		WorkflowURL string                  `json:"workflow_url,omitempty"`
	}{orderJSON: orderJSON{Order: rec.Order}, History: rec.History, Payments: rec.Payments, Refunds: rec.Refunds, Events: rec.Events}
	if s.cfg.WorkflowLink != nil {
		out.WorkflowURL = s.cfg.WorkflowLink(rec.Order.OrderNo)
	}
	return c.JSON(out)
}

// pageDeadline moves the connection's write deadline on before each
// write of a streamed answer (a page of the export).
type pageDeadline struct {
	w      io.Writer
	extend func()
}

func (p pageDeadline) Write(b []byte) (int, error) {
	p.extend()
	return p.w.Write(b)
}

// exportOrders: GET /admin/v1/orders/export?session_id=N, a sale's orders
// as CSV, streamed (orders.Export). The status is sent before the rows: a
// store failure midway ends the body early (logged).
func (s *Server) exportOrders(c *fiber.Ctx) error {
	f, err := orderFilter(c)
	if err != nil {
		return err
	}
	if f.SessionID == 0 {
		return seckill.Errorf(seckill.EINVALID, "session_id is required")
	}
	store, log, trace, page := s.svc.Backoffice, s.log, traceID(c), cmp.Or(s.exportPage, defaultExportPage)
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="orders-session-`+strconv.FormatInt(f.SessionID, 10)+`.csv"`)
	// The writer runs after the handler returned (c is gone by then): it
	// keeps only what it needs, and its own context. The answer's write
	// timeout is the server's for each page, not for the whole export: a
	// million orders take longer than one answer may, a client that stops
	// reading is still let go.
	conn, window := c.Context().Conn(), cmp.Or(s.writeTimeout, writeTimeout)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		out := pageDeadline{w: w, extend: func() { _ = conn.SetWriteDeadline(time.Now().Add(window)) }}
		if err := orders.Export(context.Background(), out, store, f, page); err != nil {
			log.Error("order export stopped", "trace_id", trace, "session_id", f.SessionID, "error", err)
		}
	})
	return nil
}
