package orders

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/seckill/seckill"
)

// Pages are the orders a filter selects, newest first, a page at a time
// (MySQL); next is the cursor of the following page, 0 after the last.
type Pages interface {
	FindOrders(ctx context.Context, f seckill.OrderFilter, before int64, limit int) (orders []*seckill.Order, next int64, err error)
}

// ExportHeader is the header row of an export.
var ExportHeader = []string{"order_no", "session_id", "sku_id", "user_id", "quantity", "amount_cents", "currency", "status",
	"created_at", "updated_at", "pay_deadline"}

// Export writes the orders f selects to w as CSV (RFC 4180, a header row,
// newest first), reading page orders at a time: a million orders cost one
// page of memory. A store failure ends the export early, after whole
// rows; the error says so.
func Export(ctx context.Context, w io.Writer, pages Pages, f seckill.OrderFilter, page int) error {
	out := csv.NewWriter(w)
	if err := out.Write(ExportHeader); err != nil {
		return err
	}
	var before int64
	for {
		orders, next, err := pages.FindOrders(ctx, f, before, page)
		if err != nil {
			out.Flush()
			return fmt.Errorf("the export stopped after whole rows: %w", err)
		}
		for _, o := range orders {
			_ = out.Write(exportRow(o))
		}
		out.Flush()
		if err := out.Error(); err != nil || next == 0 {
			return err
		}
		before = next
	}
}

func exportRow(o *seckill.Order) []string {
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return []string{o.OrderNo, strconv.FormatInt(o.SessionID, 10), strconv.FormatInt(o.SKUID, 10),
		strconv.FormatInt(o.UserID, 10), strconv.Itoa(o.Quantity), strconv.FormatInt(o.AmountCents, 10),
		o.Currency, string(o.Status), stamp(o.CreatedAt), stamp(o.UpdatedAt), stamp(o.PayDeadline)}
}
