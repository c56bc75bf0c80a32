package mysql

import (
	"context"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// RefundOrder starts an operator's refund of a paid order (ch is an
// ActionRefund naming it), in one transaction under the order's row lock:
// the order PAID → REFUND_PENDING with its ledger row, its captured payment
// REFUND_PENDING and due (the refund relay sends it to the provider, then
// MarkRefunded ends both REFUNDED), its units back to the session's stock
// and its user's slots freed, and the change in the session's audit ledger.
//
// ch.SessionID is taken from the order. A retry with the same request id
// changes nothing (applied is false); the id used for another change is
// refused with IDEMPOTENCY_MISMATCH. Any other refund of an order that is
// not PAID any more is refused with CONFLICT: one order, one refund.
//
// The units go back whether or not the sale still runs: the unit is not
// sold any more, and db_stock + Σqty(orders that hold stock) stays the
// session's total. After the end nobody can buy it.
func (db *DB) RefundOrder(ctx context.Context, ch *seckill.SessionChange) (o *seckill.Order, applied bool, err error) {
	if ch.Action != seckill.ActionRefund {
		return nil, false, seckill.Errorf(seckill.EINVALID, "RefundOrder takes a refund, not %q", ch.Action)
	}
	now := db.now()
	ch.At = now
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := lockOrder(tx, ch.OrderNo)
		if err != nil {
			return err
		}
		ch.SessionID = row.SessionID
		if err := ch.Check(); err != nil {
			return err
		}
		if seen, err := auditSeen(tx, ch); err != nil || seen {
			return err
		}
		t, err := seckill.Status(row.Status).OperatorRefund(row.OrderNo)
		if err != nil {
			return err
		}
		res := tx.Model(&paymentRow{}).Where("order_no = ? AND status = ?", row.OrderNo, paymentCaptured).
			Updates(map[string]any{"status": paymentRefundPending, "refund_next_at": now, "updated_at": now})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return seckill.Errorf(seckill.ECONFLICT, "order %s is PAID but has %d captured payments: reconcile it first", row.OrderNo, res.RowsAffected)
		}
		units, err := transition(tx, row, t, ch.TraceID, now)
		if err != nil {
			return err
		}
		if err := giveBack(tx, row.SessionID, map[int64]int{row.SKUID: units}, now); err != nil {
			return err
		}
		if err := audit(tx, ch); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// Read back: the row's updated_at is the database's (changedAt).
	o, err = db.Order(ctx, ch.OrderNo)
	return o, applied, err
}

// OperatorRefundsPending returns up to limit orders an operator refunded
// whose provider refund has not completed (REFUND_PENDING), oldest change
// first: the sweep gives back in Redis the units of those whose release
// did not run (RefundOrder commits before Redis is asked).
func (db *DB) OperatorRefundsPending(ctx context.Context, limit int) ([]*seckill.Order, error) {
	var rows []orderRow
	if err := db.gorm.WithContext(ctx).Where("status = ? AND reason = ?", seckill.StatusRefundPending, seckill.ReasonOperatorRefund).
		Order("updated_at").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]*seckill.Order, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}
