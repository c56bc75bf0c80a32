package mysql

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// Reasons recorded on orders and ledger rows.
const (
	ReasonCreated   = "created"
	ReasonDBSoldOut = "db_sold_out"   // the conditional decrement refused: Redis and MySQL drifted
	ReasonDBLimit   = "db_user_limit" // the slot primary key refused: the per-user limit held in MySQL
)

// errRefused carries a business refusal out of a transaction so that the
// transaction rolls back and the order is recorded as FAILED instead.
type errRefused struct{ reason string }

func (e errRefused) Error() string { return "refused: " + e.reason }

// CreateOrder creates the order row in WAIT_PAY, takes its per-user slots and
// decrements the database stock, all in one transaction. It is idempotent on
// the order number: called again (an activity retry after a timeout), it
// returns the order as it is, and never decrements twice. The order it
// returns is the row as stored (times at the columns' millisecond), so the
// caller can cache it as the order's view without reading it back.
//
// If the database refuses (not enough stock, or the user's slots are taken)
// the order is stored as FAILED, with nothing decremented.
//
// Concurrent calls for one session are batched into one transaction (see
// batch.go): same outcome per order, one fsync for all.
func (db *DB) CreateOrder(ctx context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error) {
	return db.batchCreate(ctx, req, payDeadline)
}

// createOne is CreateOrder for one order in its own transaction. It does
// not look for the row first: a retry is rare, and the unique order number
// refuses its insert (the transaction rolls back whole) at the cost of one
// read then, where a look first would cost every new order a round trip.
func (db *DB) createOne(ctx context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error) {
	now := db.now()
	row := newOrderRow(req, payDeadline, now)
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if slots := slotRows(req); len(slots) > 0 {
			if err := tx.Create(&slots).Error; err != nil {
				if isDuplicate(err) {
					return errRefused{ReasonDBLimit}
				}
				return err
			}
		}
		// The hot rows are touched last so their locks are held for the shortest time.
		if ok, err := takeStock(tx, req.SessionID, map[int64]int{req.SKUID: req.Quantity}, now); err != nil {
			return err
		} else if !ok {
			return errRefused{ReasonDBSoldOut}
		}
		return recordChange(tx, ledger(&row, seckill.StatusQueued, -req.Quantity, now))
	})
	var refused errRefused
	switch {
	case err == nil:
		return row.domain(), nil
	case errors.As(err, &refused):
		return db.createFailed(ctx, req, refused.reason)
	case isDuplicate(err):
		// The order exists: a retry, a concurrent attempt that won the
		// insert, or a tombstone. It is returned as it is.
		return db.Order(ctx, req.OrderNo)
	default:
		return nil, err
	}
}

// createFailed records an order the database refused, so that its status
// is visible, retries see it, and reconcile counts it as drift.
func (db *DB) createFailed(ctx context.Context, req *seckill.OrderRequest, reason string) (*seckill.Order, error) {
	now := db.now()
	row := newOrderRow(req, time.Time{}, now)
	row.Status, row.Reason, row.PayDeadline = string(seckill.StatusFailed), reason, nil
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return recordChange(tx, ledger(&row, seckill.StatusQueued, 0, now))
	})
	if isDuplicate(err) {
		return db.Order(ctx, req.OrderNo)
	} else if err != nil {
		return nil, err
	}
	return row.domain(), nil
}

type createCall struct {
	req      *seckill.OrderRequest
	deadline time.Time
	done     chan createResult
	// trace is the caller's span: the batch's statements are spans of
	// its first call's trace.
	trace trace.SpanContext
}

type createResult struct {
	order *seckill.Order
	err   error
}

// batchCreate queues one order and waits for its batch.
func (db *DB) batchCreate(ctx context.Context, req *seckill.OrderRequest, deadline time.Time) (*seckill.Order, error) {
	call := &createCall{req: req, deadline: deadline, done: make(chan createResult, 1), trace: trace.SpanContextFromContext(ctx)}
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
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), calls[0].trace), batchTimeout)
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

// createBatch creates every order of one session in one transaction: one
// INSERT of their rows, one of their slots, a single conditional decrement
// of their summed quantity (and one per item), one INSERT of the ledger
// and one of the events. Orders that exist already are returned as they
// are. When a slot is taken, the slots' INSERT refuses as a whole and the
// slots are taken order by order instead: an order whose slot is taken is
// stored FAILED (the per-user limit held in MySQL) and takes no stock.
// Statements, not rows, are what a batch costs MariaDB and this process
// (docs/BENCHMARKS.md).
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
	// rows are the orders to create, at[j] the call of rows[j]; a retry of
	// an order in the same batch shares its result (dup).
	var rows []orderRow
	var at []int
	dup := map[int]int{}
	first := map[string]int{}
	for i, c := range calls {
		if row, ok := known[c.req.OrderNo]; ok {
			out[i] = createResult{order: row.domain()}
		} else if j, ok := first[c.req.OrderNo]; ok {
			dup[i] = j
		} else {
			first[c.req.OrderNo] = i
			rows, at = append(rows, newOrderRow(c.req, c.deadline, now)), append(at, i)
		}
	}
	if len(rows) > 0 {
		err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&rows).Error; err != nil {
				return err // a concurrent attempt of one of them: let every call retry
			}
			failed, err := takeSlots(tx, calls, rows, at)
			if err != nil {
				return err
			}
			units, changes := map[int64]int{}, make([]orderChange, len(rows))
			for j := range rows {
				row, delta := &rows[j], 0
				if failed[j] {
					row.Status, row.Reason, row.PayDeadline = string(seckill.StatusFailed), ReasonDBLimit, nil
				} else {
					units[row.SKUID] += row.Quantity
					delta = -row.Quantity
				}
				changes[j] = ledger(row, seckill.StatusQueued, delta, now)
				out[at[j]] = createResult{order: row.domain()}
			}
			if ok, err := takeStock(tx, calls[0].req.SessionID, units, now); err != nil {
				return err
			} else if !ok {
				return errBatchDoesNotFit
			}
			return recordChange(tx, changes...)
		})
		if err != nil {
			return nil, err
		}
	}
	for i, j := range dup {
		out[i] = out[j]
	}
	return out, nil
}

// takeSlots takes the slots of a batch's new orders (rows, of calls[at[j]])
// in one INSERT. If one is taken, that INSERT refuses whole (in MySQL a
// failed statement rolls back alone, the transaction goes on) and each
// order's slots are taken by one INSERT of its own: an order whose slot is
// taken is set FAILED in its row and reported in failed.
func takeSlots(tx *gorm.DB, calls []*createCall, rows []orderRow, at []int) (failed map[int]bool, err error) {
	var all []slotRow
	for _, i := range at {
		all = append(all, slotRows(calls[i].req)...)
	}
	if len(all) == 0 {
		return nil, nil
	}
	if err := tx.Create(&all).Error; !isDuplicate(err) {
		return nil, err
	}
	failed = map[int]bool{}
	for j, i := range at {
		slots := slotRows(calls[i].req)
		if len(slots) == 0 {
			continue
		}
		if err := tx.Create(&slots).Error; !isDuplicate(err) {
			if err != nil {
				return nil, err
			}
			continue
		}
		failed[j] = true
		if err := tx.Model(&orderRow{}).Where("order_no = ?", rows[j].OrderNo).Updates(map[string]any{
			"status": string(seckill.StatusFailed), "reason": ReasonDBLimit, "pay_deadline": nil}).Error; err != nil {
			return nil, err
		}
	}
	return failed, nil
}

// newOrderRow is the row of req created in WAIT_PAY at now, to be paid by
// payDeadline.
func newOrderRow(req *seckill.OrderRequest, payDeadline, now time.Time) orderRow {
	deadline := columnTime(payDeadline)
	return orderRow{
		OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, Title: req.Title, UserID: req.UserID,
		Quantity: req.Quantity, AmountCents: req.AmountCents(), Currency: req.Currency, Status: string(seckill.StatusWaitPay),
		Reason: ReasonCreated, TraceID: req.TraceID, PayDeadline: &deadline, CreatedAt: now, UpdatedAt: now,
	}
}

// slotRows are the per-user slots req takes.
func slotRows(req *seckill.OrderRequest) []slotRow {
	slots := make([]slotRow, len(req.Slots))
	for i, s := range req.Slots {
		slots[i] = slotRow{SessionID: req.SessionID, UserID: req.UserID, Slot: s, OrderNo: req.OrderNo}
	}
	return slots
}
