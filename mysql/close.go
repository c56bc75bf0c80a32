package mysql

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// CloseOrder is the compensation: compare-and-set WAIT_PAY → CLOSED, give
// the units back to the database stock and free the user's slots, in one
// transaction. It returns the order as the transaction left it (the caller
// caches it as the view without reading it back), and gaveBack tells
// whether this call returned stock (false on a retry, or when the close lost
// the race to a payment and the order is PAID).
//
// An order without a row (its workflow was cancelled before the row was
// created) gets a CLOSED tombstone row, so that a late attempt to create it
// finds the order number taken and can never decrement stock.
//
// Closes of one session that arrive together share one transaction and
// one increment of the stock (batch.go): same outcome per order, one fsync
// for all, so a crowd of pay timers firing at once is not bound by the
// session row's lock.
func (db *DB) CloseOrder(ctx context.Context, req *seckill.OrderRequest, reason string) (o *seckill.Order, gaveBack bool, err error) {
	return db.batchClose(ctx, req, reason)
}

// closeOne is CloseOrder for one order in its own transaction.
func (db *DB) closeOne(ctx context.Context, c *closeCall) closeResult {
	out, err := db.closeBatch(ctx, []*closeCall{c})
	if err != nil {
		return closeResult{err: err}
	}
	return out[0]
}

// closeInTx closes the orders of calls (one session's) inside tx, in a
// fixed number of statements whatever their count: their rows read and
// locked (SELECT … FOR UPDATE), a CLOSED tombstone for each order whose
// row never came, each WAIT_PAY order's transition (Status.Close: one
// compare-and-set UPDATE per reason, its slots freed, its ledger row and
// event), and the stock they give back, the session's and each item's.
// A close repeated within calls (an activity's retry) finds its order
// CLOSED, as a later retry would. It returns each call's result, with its
// order as the batch leaves it.
func closeInTx(tx *gorm.DB, calls []*closeCall, now time.Time) ([]closeResult, error) {
	out := make([]closeResult, len(calls))
	nos := make([]string, len(calls))
	for i, c := range calls {
		nos[i] = c.req.OrderNo
	}
	var found []orderRow
	if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_no IN ?", nos).Find(&found).Error; err != nil {
		return nil, err
	}
	rows := map[string]*orderRow{}
	for i := range found {
		rows[found[i].OrderNo] = &found[i]
	}
	var tombs []*orderRow
	var changes []orderChange
	var freed []string
	closing := map[string][]int64{} // the rows' ids, by the reason they close for
	back := map[int64]int{}
	for i, c := range calls {
		req := c.req
		row, ok := rows[req.OrderNo]
		if !ok {
			row = &orderRow{
				OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, Title: req.Title, UserID: req.UserID,
				Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusClosed),
				Reason: c.reason, TraceID: req.TraceID, CreatedAt: now, UpdatedAt: now,
			}
			rows[req.OrderNo], tombs = row, append(tombs, row)
			changes = append(changes, ledger(row, seckill.StatusQueued, 0, now))
			continue
		}
		t := seckill.Status(row.Status).Close(c.reason)
		if t == nil {
			continue // already closed, paid or failed: nothing to give back
		}
		closing[t.Reason] = append(closing[t.Reason], row.ID)
		freed = append(freed, row.OrderNo)
		back[row.SKUID] += row.Quantity
		row.Status, row.Reason = string(t.To), t.Reason
		ch := ledger(row, t.From, row.Quantity, now)
		row.UpdatedAt = ch.order.UpdatedAt
		changes = append(changes, ch)
		out[i].gaveBack = true
	}
	for i, c := range calls {
		out[i].order = rows[c.req.OrderNo].domain()
	}
	if len(tombs) > 0 {
		if err := tx.Create(tombs).Error; err != nil {
			return nil, err
		}
	}
	for reason, ids := range closing {
		res := tx.Model(&orderRow{}).Where("id IN ? AND status = ?", ids, seckill.StatusWaitPay).
			Updates(map[string]any{"status": seckill.StatusClosed, "reason": reason, "updated_at": changedAt(now)})
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != int64(len(ids)) {
			return nil, fmt.Errorf("closing %d orders: compare-and-set WAIT_PAY → CLOSED changed %d under the rows' locks", len(ids), res.RowsAffected)
		}
	}
	if len(freed) > 0 {
		if err := tx.Where("order_no IN ?", freed).Delete(&slotRow{}).Error; err != nil {
			return nil, err
		}
	}
	if err := recordChange(tx, changes...); err != nil {
		return nil, err
	}
	return out, giveBack(tx, calls[0].req.SessionID, back, now)
}

type closeCall struct {
	req    *seckill.OrderRequest
	reason string
	done   chan closeResult
	trace  trace.SpanContext // as createCall's
}

type closeResult struct {
	order    *seckill.Order
	gaveBack bool
	err      error
}

// batchClose queues one close and waits for its batch.
func (db *DB) batchClose(ctx context.Context, req *seckill.OrderRequest, reason string) (*seckill.Order, bool, error) {
	call := &closeCall{req: req, reason: reason, done: make(chan closeResult, 1), trace: trace.SpanContextFromContext(ctx)}
	db.closes.add(req.SessionID, call)
	select {
	case r := <-call.done:
		return r.order, r.gaveBack, r.err
	case <-ctx.Done():
		// The batch may still commit this close: the retry finds the order
		// CLOSED and gives nothing back twice (CloseOrder is idempotent).
		return nil, false, ctx.Err()
	}
}

func (db *DB) runCloses(calls []*closeCall) {
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), calls[0].trace), batchTimeout)
	defer cancel()
	if len(calls) > 1 {
		results, err := db.closeBatch(ctx, calls)
		if err == nil {
			for i, c := range calls {
				c.done <- results[i]
			}
			return
		}
	}
	// One close, or a batch that failed as a whole: each in its own
	// transaction.
	for _, c := range calls {
		c.done <- db.closeOne(ctx, c)
	}
}

// closeBatch closes the orders of one session in one transaction
// (closeInTx).
func (db *DB) closeBatch(ctx context.Context, calls []*closeCall) (out []closeResult, err error) {
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		out, err = closeInTx(tx, calls, db.now())
		return err
	})
	return out, err
}
