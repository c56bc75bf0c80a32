package mysql

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// CloseOrder is the compensation: compare-and-set WAIT_PAY → CLOSED, give
// the units back to the database stock and free the user's slots, in one
// transaction. It returns the order's status afterwards, and gaveBack tells
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
func (db *DB) CloseOrder(ctx context.Context, req *seckill.OrderRequest, reason string) (status seckill.Status, gaveBack bool, err error) {
	return db.batchClose(ctx, req, reason)
}

// closeOne is CloseOrder for one order in its own transaction.
func (db *DB) closeOne(ctx context.Context, req *seckill.OrderRequest, reason string) (status seckill.Status, gaveBack bool, err error) {
	now := db.now()
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var qty int
		var sku int64
		if status, sku, qty, err = closeInTx(tx, req, reason, now); err != nil {
			return err
		}
		gaveBack = qty > 0
		return giveBack(tx, req.SessionID, map[int64]int{sku: qty}, now)
	})
	if err != nil {
		return "", false, err
	}
	return status, gaveBack, nil
}

// closeInTx closes one order inside tx: its transition (Status.Close:
// WAIT_PAY → CLOSED, its slots freed, its ledger row), or a CLOSED tombstone
// when the row never came. It returns the order's status after it and the
// units to give back to its item's stock (the caller's one increment).
func closeInTx(tx *gorm.DB, req *seckill.OrderRequest, reason string, now time.Time) (seckill.Status, int64, int, error) {
	var row orderRow
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_no = ?", req.OrderNo).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		row = orderRow{
			OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, Title: req.Title, UserID: req.UserID,
			Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusClosed),
			Reason: reason, TraceID: req.TraceID, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&row).Error; err != nil {
			return "", 0, 0, err
		}
		return seckill.StatusClosed, row.SKUID, 0, recordChange(tx, ledger(&row, seckill.StatusQueued, 0, now))
	} else if err != nil {
		return "", 0, 0, err
	}
	t := seckill.Status(row.Status).Close(reason)
	if t == nil {
		return seckill.Status(row.Status), row.SKUID, 0, nil // already closed, paid or failed: nothing to give back
	}
	units, err := transition(tx, &row, t, "", now)
	return t.To, row.SKUID, units, err
}

type closeCall struct {
	req    *seckill.OrderRequest
	reason string
	done   chan closeResult
	trace  trace.SpanContext // as createCall's
}

type closeResult struct {
	status   seckill.Status
	gaveBack bool
	err      error
}

// batchClose queues one close and waits for its batch.
func (db *DB) batchClose(ctx context.Context, req *seckill.OrderRequest, reason string) (seckill.Status, bool, error) {
	call := &closeCall{req: req, reason: reason, done: make(chan closeResult, 1), trace: trace.SpanContextFromContext(ctx)}
	db.closes.add(req.SessionID, call)
	select {
	case r := <-call.done:
		return r.status, r.gaveBack, r.err
	case <-ctx.Done():
		// The batch may still commit this close: the retry finds the order
		// CLOSED and gives nothing back twice (CloseOrder is idempotent).
		return "", false, ctx.Err()
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
		status, gaveBack, err := db.closeOne(ctx, c.req, c.reason)
		c.done <- closeResult{status, gaveBack, err}
	}
}

// closeBatch closes the orders of one session in one transaction with one
// increment of the stock they give back. A close repeated within the batch
// (an activity's retry) finds its order CLOSED, as a later retry would.
func (db *DB) closeBatch(ctx context.Context, calls []*closeCall) ([]closeResult, error) {
	out := make([]closeResult, len(calls))
	now := db.now()
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		back := map[int64]int{}
		for i, c := range calls {
			status, sku, qty, err := closeInTx(tx, c.req, c.reason, now)
			if err != nil {
				return err
			}
			out[i] = closeResult{status: status, gaveBack: qty > 0}
			back[sku] += qty
		}
		return giveBack(tx, calls[0].req.SessionID, back, now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
