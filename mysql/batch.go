package mysql

import (
	"context"
	"errors"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// The session row is the hot row of a sale: every order's transaction
// takes its lock to move the stock and holds it through the commit's
// fsync, so one session creates (or closes) at most one order per fsync
// (docs/BENCHMARKS.md has the figures). The batchers are group
// commit at the application level: CreateOrder calls that arrive together
// for a session share one transaction, one conditional decrement of their
// summed quantity and one fsync; so do CloseOrder calls, with one
// increment. If a create batch as a whole does not fit in the stock, every
// order of it falls back to its own transaction, so the refusals are
// exact (any other failure goes back to every call, whose activity
// retries); a close batch that fails for any reason falls back to one
// transaction per order, so one order's trouble is never another's.

// batchWindow is how long the first order of a batch waits for company.
const batchWindow = 2 * time.Millisecond

// maxBatch bounds a batch (and the transaction's size).
const maxBatch = 128

// batcher groups calls per session and runs each group with run.
type batcher[C any] struct {
	run func(calls []C)
	mu  sync.Mutex
	// queues holds the calls waiting per session; a session with a queue
	// has a flusher goroutine on its way.
	queues map[int64][]C
}

func newBatcher[C any](run func(calls []C)) *batcher[C] {
	return &batcher[C]{run: run, queues: map[int64][]C{}}
}

// add queues a call of a session; run gets it within batchWindow, or at
// once when the batch is full.
func (b *batcher[C]) add(sessionID int64, call C) {
	b.mu.Lock()
	q := b.queues[sessionID]
	b.queues[sessionID] = append(q, call)
	full := len(q)+1 >= maxBatch
	first := len(q) == 0
	b.mu.Unlock()
	if first {
		go func() {
			time.Sleep(batchWindow)
			b.flush(sessionID)
		}()
	} else if full {
		go b.flush(sessionID)
	}
}

// flush runs the queued calls of a session in batches of at most maxBatch.
func (b *batcher[C]) flush(sessionID int64) {
	b.mu.Lock()
	calls := b.queues[sessionID]
	delete(b.queues, sessionID)
	b.mu.Unlock()
	for len(calls) > 0 {
		n := min(len(calls), maxBatch)
		b.run(calls[:n])
		calls = calls[n:]
	}
}

// batchTimeout bounds one batch's transaction.
const batchTimeout = 10 * time.Second

type createCall struct {
	req      *seckill.OrderRequest
	deadline time.Time
	done     chan createResult
}

type createResult struct {
	order *seckill.Order
	err   error
}

// batchCreate queues one order and waits for its batch.
func (db *DB) batchCreate(ctx context.Context, req *seckill.OrderRequest, deadline time.Time) (*seckill.Order, error) {
	call := &createCall{req: req, deadline: deadline, done: make(chan createResult, 1)}
	db.creates.add(req.SessionID, call)
	select {
	case r := <-call.done:
		return r.order, r.err
	case <-ctx.Done():
		// The batch may still commit this order: the activity's retry finds
		// it by its number (CreateOrder is idempotent).
		return nil, ctx.Err()
	}
}

func (db *DB) runCreates(calls []*createCall) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if len(calls) == 1 {
		o, err := db.createOne(ctx, calls[0].req, calls[0].deadline)
		calls[0].done <- createResult{o, err}
		return
	}
	results, err := db.createBatch(ctx, calls)
	if errors.Is(err, errBatchDoesNotFit) {
		// Not enough stock for all of them together: decide one by one.
		for _, c := range calls {
			o, err := db.createOne(ctx, c.req, c.deadline)
			c.done <- createResult{o, err}
		}
		return
	}
	for i, c := range calls {
		if err != nil {
			c.done <- createResult{nil, err}
		} else {
			c.done <- results[i]
		}
	}
}

var errBatchDoesNotFit = errors.New("batch does not fit in the stock")

// createBatch creates every order of one session in one transaction with a
// single conditional decrement of their summed quantity. Orders that exist
// already are returned as they are; an order whose slots are taken is
// stored FAILED (the per-user limit held in MySQL) and takes no stock.
func (db *DB) createBatch(ctx context.Context, calls []*createCall) ([]createResult, error) {
	out := make([]createResult, len(calls))
	nos := make([]string, len(calls))
	for i, c := range calls {
		nos[i] = c.req.OrderNo
	}
	var existing []orderRow
	if err := db.gorm.WithContext(ctx).Where("order_no IN ?", nos).Find(&existing).Error; err != nil {
		return nil, err
	}
	known := map[string]*orderRow{}
	for i := range existing {
		known[existing[i].OrderNo] = &existing[i]
	}
	now := db.now()
	dup := map[int]int{}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sessionID, total := calls[0].req.SessionID, 0
		var changes []orderChange
		first := map[string]int{} // retries of one order in one batch share its result
		for i, c := range calls {
			if row, ok := known[c.req.OrderNo]; ok {
				out[i] = createResult{order: row.domain()}
				continue
			}
			if j, ok := first[c.req.OrderNo]; ok {
				dup[i] = j
				continue
			}
			first[c.req.OrderNo] = i
			req := c.req
			deadline := columnTime(c.deadline)
			row := orderRow{
				OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, UserID: req.UserID,
				Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusWaitPay),
				Reason: ReasonCreated, TraceID: req.TraceID, PayDeadline: &deadline, CreatedAt: now, UpdatedAt: now,
			}
			if err := tx.Create(&row).Error; err != nil {
				return err // a concurrent attempt of the same order: let every call retry
			}
			slots := make([]slotRow, len(req.Slots))
			for j, s := range req.Slots {
				slots[j] = slotRow{SessionID: req.SessionID, UserID: req.UserID, Slot: s, OrderNo: req.OrderNo}
			}
			if len(slots) > 0 {
				// In MySQL a failed statement rolls back alone; the
				// transaction goes on without this order's stock.
				if err := tx.Create(&slots).Error; isDuplicate(err) {
					row.Status, row.Reason, row.PayDeadline = string(seckill.StatusFailed), ReasonDBLimit, nil
					if err := tx.Model(&orderRow{}).Where("id = ?", row.ID).Updates(map[string]any{
						"status": row.Status, "reason": row.Reason, "pay_deadline": nil}).Error; err != nil {
						return err
					}
					changes = append(changes, ledger(&row, seckill.StatusQueued, 0, now))
					out[i] = createResult{order: row.domain()}
					continue
				} else if err != nil {
					return err
				}
			}
			total += req.Quantity
			changes = append(changes, ledger(&row, seckill.StatusQueued, -req.Quantity, now))
			out[i] = createResult{order: row.domain()}
		}
		if total > 0 {
			res := tx.Model(&sessionRow{}).Where("id = ? AND stock >= ?", sessionID, total).
				Updates(map[string]any{"stock": gorm.Expr("stock - ?", total), "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errBatchDoesNotFit
			}
		}
		return recordChange(tx, changes...)
	})
	if err != nil {
		return nil, err
	}
	for i, j := range dup {
		out[i] = out[j]
	}
	return out, nil
}

type closeCall struct {
	req    *seckill.OrderRequest
	reason string
	done   chan closeResult
}

type closeResult struct {
	status   seckill.Status
	gaveBack bool
	err      error
}

// batchClose queues one close and waits for its batch.
func (db *DB) batchClose(ctx context.Context, req *seckill.OrderRequest, reason string) (seckill.Status, bool, error) {
	call := &closeCall{req: req, reason: reason, done: make(chan closeResult, 1)}
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
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
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
		back := 0
		for i, c := range calls {
			status, qty, err := closeInTx(tx, c.req, c.reason, now)
			if err != nil {
				return err
			}
			out[i] = closeResult{status: status, gaveBack: qty > 0}
			back += qty
		}
		return giveBack(tx, calls[0].req.SessionID, back, now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
