package mysql

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

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

// lockOrder reads an order's row and locks it for the transaction's rest
// (SELECT … FOR UPDATE); NOT_FOUND when there is none.
func lockOrder(tx *gorm.DB, orderNo string) (*orderRow, error) {
	var row orderRow
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_no = ?", orderNo).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "order %s not found", orderNo)
	}
	return &row, err
}

// transition persists an order's transition (seckill.Transition) on row,
// which the caller holds locked: the compare-and-set from t.From, the
// reason, the slots freed when it gives the units back, and its ledger row
// (with the event it makes). row is left as stored now, so the caller can
// return the order without reading it back. It returns the units to give
// back to the session's stock, which is the caller's (one increment per
// batch).
func transition(tx *gorm.DB, row *orderRow, t *seckill.Transition, traceID string, now time.Time) (int, error) {
	res := tx.Model(&orderRow{}).Where("id = ? AND status = ?", row.ID, t.From).
		Updates(map[string]any{"status": t.To, "reason": t.Reason, "updated_at": changedAt(now)})
	if res.Error != nil {
		return 0, res.Error
	}
	if res.RowsAffected != 1 {
		return 0, fmt.Errorf("order %s: compare-and-set %s → %s lost under the row lock", row.OrderNo, t.From, t.To)
	}
	units := 0
	if t.GivesBack {
		if err := tx.Where("order_no = ?", row.OrderNo).Delete(&slotRow{}).Error; err != nil {
			return 0, err
		}
		units = row.Quantity
	}
	// The ledger row and the event carry the change's trace id; the
	// order's row keeps its purchase's.
	stored := row.TraceID
	row.Status, row.Reason, row.TraceID = string(t.To), t.Reason, cmp.Or(traceID, row.TraceID)
	ch := ledger(row, t.From, units, now)
	row.UpdatedAt, row.TraceID = ch.order.UpdatedAt, stored
	return units, recordChange(tx, ch)
}

// LiveHoldings returns, as reservations, the orders of a session that hold
// stock (WAIT_PAY, PAID) with their slots: what Redis must hold for them
// when it is rebuilt.
func (db *DB) LiveHoldings(ctx context.Context, sessionID int64) ([]seckill.Reservation, error) {
	var rows []orderRow
	if err := db.gorm.WithContext(ctx).Where("session_id = ? AND status IN ?", sessionID,
		seckill.Holding()).Order("id").Find(&rows).Error; err != nil {
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
			Quantity: r.Quantity, Slots: byOrder[r.OrderNo], ReservedAt: r.CreatedAt.UTC(), TraceID: r.TraceID, SKUID: r.SKUID}
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
	return db.FindOrders(ctx, seckill.OrderFilter{UserID: userID}, before, limit)
}
