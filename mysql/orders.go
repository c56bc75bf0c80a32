package mysql

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

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
	deadline := columnTime(payDeadline)
	row := orderRow{
		OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, UserID: req.UserID,
		Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusWaitPay),
		Reason: ReasonCreated, TraceID: req.TraceID, PayDeadline: &deadline, CreatedAt: now, UpdatedAt: now,
	}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		slots := make([]slotRow, len(req.Slots))
		for i, s := range req.Slots {
			slots[i] = slotRow{SessionID: req.SessionID, UserID: req.UserID, Slot: s, OrderNo: req.OrderNo}
		}
		if len(slots) > 0 {
			if err := tx.Create(&slots).Error; err != nil {
				if isDuplicate(err) {
					return errRefused{ReasonDBLimit}
				}
				return err
			}
		}
		// The hot row is touched last so its lock is held for the shortest time.
		res := tx.Model(&sessionRow{}).
			Where("id = ? AND stock >= ?", req.SessionID, req.Quantity).
			Updates(map[string]any{"stock": gorm.Expr("stock - ?", req.Quantity), "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
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

// changedAt is the updated_at of a change to an order row: now, or a
// millisecond past the row's last change when that is later. updated_at is
// the version of the order's cached view (the cache keeps the newest,
// the last writer winning a tie), so two changes in one millisecond, a
// close and the payment that came right after it, must not share one: the
// close's view, cached last, would hide the late payment's REFUND_PENDING
// for good.
func changedAt(now time.Time) clause.Expr {
	return gorm.Expr("GREATEST(CAST(? AS DATETIME(3)), updated_at + INTERVAL 1000 MICROSECOND)", now)
}

// changedTime is the updated_at changedAt stores over a row whose
// updated_at was prev, read under the row's lock.
func changedTime(prev, now time.Time) time.Time {
	if next := prev.UTC().Add(time.Millisecond); next.After(now) {
		return next
	}
	return now.UTC()
}

// columnTime is t as a DATETIME(3) column stores it (UTC, to the
// millisecond), so that the row a call returns equals the row read back.
func columnTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// createFailed records an order the database refused, so that its status
// is visible, retries see it, and reconcile counts it as drift.
func (db *DB) createFailed(ctx context.Context, req *seckill.OrderRequest, reason string) (*seckill.Order, error) {
	now := db.now()
	row := orderRow{
		OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, UserID: req.UserID,
		Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusFailed),
		Reason: reason, TraceID: req.TraceID, CreatedAt: now, UpdatedAt: now,
	}
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
		if status, qty, err = closeInTx(tx, req, reason, now); err != nil {
			return err
		}
		gaveBack = qty > 0
		return giveBack(tx, req.SessionID, qty, now)
	})
	if err != nil {
		return "", false, err
	}
	return status, gaveBack, nil
}

// closeInTx closes one order inside tx: the compare-and-set WAIT_PAY →
// CLOSED with its slots freed and its ledger row, or a CLOSED tombstone
// when the row never came. It returns the order's status after it and the
// units to give back to the session's stock (the caller's one increment).
func closeInTx(tx *gorm.DB, req *seckill.OrderRequest, reason string, now time.Time) (seckill.Status, int, error) {
	var row orderRow
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_no = ?", req.OrderNo).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		row = orderRow{
			OrderNo: req.OrderNo, SessionID: req.SessionID, SKUID: req.SKUID, UserID: req.UserID,
			Quantity: req.Quantity, AmountCents: req.AmountCents(), Status: string(seckill.StatusClosed),
			Reason: reason, TraceID: req.TraceID, CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&row).Error; err != nil {
			return "", 0, err
		}
		return seckill.StatusClosed, 0, recordChange(tx, ledger(&row, seckill.StatusQueued, 0, now))
	} else if err != nil {
		return "", 0, err
	}
	if status := seckill.Status(row.Status); status != seckill.StatusWaitPay {
		return status, 0, nil // already closed, paid or failed: nothing to give back
	}
	res := tx.Model(&orderRow{}).Where("id = ? AND status = ?", row.ID, seckill.StatusWaitPay).
		Updates(map[string]any{"status": seckill.StatusClosed, "reason": reason, "updated_at": changedAt(now)})
	if res.Error != nil {
		return "", 0, res.Error
	}
	if res.RowsAffected != 1 {
		return "", 0, errors.New("close: compare-and-set lost under a row lock")
	}
	if err := tx.Where("order_no = ?", row.OrderNo).Delete(&slotRow{}).Error; err != nil {
		return "", 0, err
	}
	from := row.Status
	row.Status, row.Reason = string(seckill.StatusClosed), reason
	return seckill.StatusClosed, row.Quantity, recordChange(tx, ledger(&row, seckill.Status(from), row.Quantity, now))
}

// giveBack adds units to a session's stock (nothing when units is 0).
func giveBack(tx *gorm.DB, sessionID int64, units int, now time.Time) error {
	if units == 0 {
		return nil
	}
	return tx.Model(&sessionRow{}).Where("id = ?", sessionID).
		Updates(map[string]any{"stock": gorm.Expr("stock + ?", units), "updated_at": now}).Error
}

// Order returns one order by its number.
func (db *DB) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	var row orderRow
	err := db.gorm.WithContext(ctx).Where("order_no = ?", orderNo).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	} else if err != nil {
		return nil, err
	}
	return row.domain(), nil
}

// ledger is the change of row from from to row.Status: its ledger row,
// and the order as the change left it (the snapshot its event carries).
// row is the order with its new status and reason, and the updated_at it
// had before the change: a change of an existing row stamps what
// changedAt stores, one from QUEUED is the row's insert (updated_at now).
func ledger(row *orderRow, from seckill.Status, stockDelta int, now time.Time) orderChange {
	o := row.domain()
	if from != seckill.StatusQueued {
		o.UpdatedAt = changedTime(row.UpdatedAt, now)
	}
	return orderChange{order: o, ledger: &ledgerRow{
		OrderNo: row.OrderNo, SessionID: row.SessionID, FromStatus: string(from), ToStatus: row.Status,
		Quantity: row.Quantity, StockDelta: stockDelta, Reason: row.Reason, TraceID: row.TraceID, CreatedAt: now,
	}}
}

// LiveHoldings returns, as reservations, the orders of a session that hold
// stock (WAIT_PAY, PAID) with their slots: what Redis must hold for them
// when it is rebuilt.
func (db *DB) LiveHoldings(ctx context.Context, sessionID int64) ([]seckill.Reservation, error) {
	var rows []orderRow
	if err := db.gorm.WithContext(ctx).Where("session_id = ? AND status IN ?", sessionID,
		[]seckill.Status{seckill.StatusWaitPay, seckill.StatusPaid}).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	var slots []slotRow
	if err := db.gorm.WithContext(ctx).Where("session_id = ?", sessionID).Find(&slots).Error; err != nil {
		return nil, err
	}
	byOrder := map[string][]int{}
	for _, s := range slots {
		byOrder[s.OrderNo] = append(byOrder[s.OrderNo], s.Slot)
	}
	out := make([]seckill.Reservation, len(rows))
	for i, r := range rows {
		out[i] = seckill.Reservation{OrderNo: r.OrderNo, SessionID: r.SessionID, UserID: r.UserID,
			Quantity: r.Quantity, Slots: byOrder[r.OrderNo], ReservedAt: r.CreatedAt.UTC(), TraceID: r.TraceID}
	}
	return out, nil
}

// OverdueOrders returns up to limit WAIT_PAY orders, of any session, whose
// pay deadline is before before, the oldest deadline first: the orders the
// sweep looks at (their workflow should have closed them).
func (db *DB) OverdueOrders(ctx context.Context, before time.Time, limit int) ([]*seckill.Order, error) {
	var rows []orderRow
	if err := db.gorm.WithContext(ctx).Where("status = ? AND pay_deadline < ?", seckill.StatusWaitPay, before.UTC()).
		Order("pay_deadline").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*seckill.Order, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// UserOrders returns up to limit of a user's orders, newest first, older
// than the order whose row id is before (0: from the newest), and the row
// id to continue after (0 when there is no more). Rows are ordered by id,
// which grows with creation.
func (db *DB) UserOrders(ctx context.Context, userID, before int64, limit int) ([]*seckill.Order, int64, error) {
	q := db.gorm.WithContext(ctx).Where("user_id = ?", userID)
	if before > 0 {
		q = q.Where("id < ?", before)
	}
	var rows []orderRow
	if err := q.Order("id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, 0, err
	}
	var next int64
	if len(rows) > limit {
		rows = rows[:limit]
		next = rows[limit-1].ID
	}
	out := make([]*seckill.Order, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, next, nil
}
