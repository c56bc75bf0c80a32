package mysql

import (
	"context"
	"errors"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// PendingRefunds lists payments waiting for their refund, oldest first.
func (db *DB) PendingRefunds(ctx context.Context, limit int) ([]seckill.Refund, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("status = ?", paymentRefundPending).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.Refund, len(rows))
	for i, r := range rows {
		out[i] = seckill.Refund{PaymentID: r.PaymentID, OrderNo: r.OrderNo, AmountCents: r.AmountCents, TraceID: r.TraceID}
	}
	return out, nil
}

// MarkRefunded records that a payment's money went back: the payment
// REFUND_PENDING → REFUNDED, and its order REFUND_PENDING → REFUNDED once no
// payment of it waits any more (with a ledger row), in one transaction.
// Idempotent: a second call changes nothing. It returns the order's status.
func (db *DB) MarkRefunded(ctx context.Context, paymentID, refundID string) (seckill.Status, error) {
	var status seckill.Status
	now := db.now()
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var pay paymentRow
		err := tx.Where("payment_id = ?", paymentID).Take(&pay).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.Errorf(seckill.ENOTFOUND, "payment %s not found", paymentID)
		} else if err != nil {
			return err
		}
		var row orderRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("order_no = ?", pay.OrderNo).Take(&row).Error; err != nil {
			return err
		}
		status = seckill.Status(row.Status)
		if pay.Status == paymentCaptured {
			return seckill.Errorf(seckill.ECONFLICT, "payment %s paid its order; it is not refunded", paymentID)
		}
		if err := tx.Model(&paymentRow{}).Where("id = ? AND status = ?", pay.ID, paymentRefundPending).
			Updates(map[string]any{"status": paymentRefunded, "refund_id": refundID, "updated_at": now}).Error; err != nil {
			return err
		}
		if status != seckill.StatusRefundPending {
			return nil // a duplicate payment of a PAID order: the order is unchanged
		}
		var waiting int64
		if err := tx.Model(&paymentRow{}).Where("order_no = ? AND status = ?", row.OrderNo, paymentRefundPending).
			Count(&waiting).Error; err != nil {
			return err
		}
		if waiting > 0 {
			return nil
		}
		if err := tx.Model(&orderRow{}).Where("id = ? AND status = ?", row.ID, seckill.StatusRefundPending).
			Updates(map[string]any{"status": seckill.StatusRefunded, "reason": "refunded", "updated_at": now}).Error; err != nil {
			return err
		}
		row.Status, row.Reason, row.TraceID = string(seckill.StatusRefunded), "refunded", traceOr(pay.TraceID, row.TraceID)
		status = seckill.StatusRefunded
		return tx.Create(ledger(&row, seckill.StatusRefundPending, 0, now)).Error
	})
	return status, err
}
