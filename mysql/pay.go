package mysql

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// ApplyPayment records a captured payment against its order, in one
// transaction, and returns what it did and the order's status afterwards:
// the order's transition is Status.Pay's (PAID, a late payment's
// REFUND_PENDING, or none, the payment then waiting for its refund); the
// same payment or event seen before changes nothing.
//
// A payment the webhook wrote as RECEIVED is applied in place.
//
// A payment whose amount differs from the order's never pays it, but the
// money was captured: it is recorded to be refunded, like a second payment.
func (db *DB) ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, seckill.Status, error) {
	var outcome seckill.PaymentOutcome
	var status seckill.Status
	now := db.now()
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := lockOrder(tx, p.OrderNo)
		if err != nil {
			return err
		}
		status = seckill.Status(row.Status)
		var seen []paymentRow
		if err := tx.Where("payment_id = ? OR event_id = ?", p.PaymentID, p.EventID).Find(&seen).Error; err != nil {
			return err
		}
		// A RECEIVED row of this very payment (the webhook wrote it before
		// signalling) is applied in place; any other row means it was
		// applied before.
		var received *paymentRow
		for i := range seen {
			if seen[i].Status != paymentReceived || seen[i].PaymentID != p.PaymentID {
				outcome = seckill.PaymentDuplicate
				return nil
			}
			received = &seen[i]
		}
		pay := paymentRow{
			PaymentID: p.PaymentID, EventID: p.EventID, OrderNo: p.OrderNo, AmountCents: p.AmountCents,
			Status: paymentRefundPending, TraceID: p.TraceID, RefundNextAt: &now, CreatedAt: now, UpdatedAt: now,
		}
		var t *seckill.Transition
		outcome, t = status.Pay(p.AmountCents, row.AmountCents)
		if outcome == seckill.PaymentCaptured {
			pay.Status, pay.RefundNextAt = paymentCaptured, nil
		}
		if received != nil {
			res := tx.Model(&paymentRow{}).Where("id = ? AND status = ?", received.ID, paymentReceived).
				Updates(map[string]any{"status": pay.Status, "refund_next_at": pay.RefundNextAt, "updated_at": now})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return errors.New("payment: RECEIVED row changed under the order's lock")
			}
		} else if err := tx.Create(&pay).Error; err != nil {
			return err
		}
		if t == nil {
			return nil
		}
		status = t.To
		_, err = transition(tx, row, t, p.TraceID, now)
		return err
	})
	if isDuplicate(err) {
		// A concurrent delivery of the same payment won the insert.
		o, oerr := db.Order(ctx, p.OrderNo)
		if oerr != nil {
			return "", "", oerr
		}
		return seckill.PaymentDuplicate, o.Status, nil
	}
	if err != nil {
		return "", "", err
	}
	return outcome, status, nil
}
