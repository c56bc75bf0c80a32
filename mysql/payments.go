package mysql

import (
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// The payments' rows: what the webhook's intake records before the
// order's workflow knows (RECEIVED, and the replays it answers), and the
// order's payment the workflow applies (ApplyPayment), in one place.

// RecordPayment writes a payment as RECEIVED before the webhook signals it
// to the order's workflow. The signal lives only in Temporal; this row
// outlives a workflow that cannot record the payment (MySQL down past its
// retries, the run terminated or lost), and the refund relay settles it
// once no workflow runs for the order. Idempotent: a payment (or event)
// already written changes nothing, and settled tells whether it was
// settled already (applied or refunded: a replay, which the caller drops);
// one still RECEIVED is delivered again. The insert comes first, so a
// new payment costs one statement.
func (db *DB) RecordPayment(ctx context.Context, p *seckill.Payment) (settled bool, err error) {
	now := db.now()
	err = db.gorm.WithContext(ctx).Create(&paymentRow{
		PaymentID: p.PaymentID, EventID: p.EventID, OrderNo: p.OrderNo, AmountCents: p.AmountCents, Currency: p.Currency,
		Status: paymentReceived, TraceID: p.TraceID, CreatedAt: now, UpdatedAt: now,
	}).Error
	if !isDuplicate(err) {
		return false, err
	}
	var n int64
	err = db.gorm.WithContext(ctx).Model(&paymentRow{}).
		Where("(payment_id = ? OR event_id = ?) AND status <> ?", p.PaymentID, p.EventID, paymentReceived).Count(&n).Error
	return n > 0, err
}

// ApplyPayment records a captured payment against its order, in one
// transaction, and returns what it did and the order as it left it (the
// caller caches it as the view without reading it back):
// the order's transition is Status.Pay's (PAID, a late payment's
// REFUND_PENDING, or none, the payment then waiting for its refund); the
// same payment or event seen before changes nothing.
//
// A payment the webhook wrote as RECEIVED is applied in place.
//
// A payment whose amount or currency differs from the order's never pays
// it, but the money was captured: it is recorded to be refunded, like a
// second payment.
func (db *DB) ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, *seckill.Order, error) {
	var outcome seckill.PaymentOutcome
	var row *orderRow
	now := db.now()
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) (err error) {
		if row, err = lockOrder(tx, p.OrderNo); err != nil {
			return err
		}
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
			PaymentID: p.PaymentID, EventID: p.EventID, OrderNo: p.OrderNo, AmountCents: p.AmountCents, Currency: p.Currency,
			Status: paymentRefundPending, TraceID: p.TraceID, RefundNextAt: &now, CreatedAt: now, UpdatedAt: now,
		}
		var t *seckill.Transition
		outcome, t = seckill.Status(row.Status).Pay(p.Pays(row.AmountCents, row.Currency))
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
		_, err = transition(tx, row, t, p.TraceID, now)
		return err
	})
	if isDuplicate(err) {
		// A concurrent delivery of the same payment won the insert.
		o, err := db.Order(ctx, p.OrderNo)
		if err != nil {
			return "", nil, err
		}
		return seckill.PaymentDuplicate, o, nil
	}
	if err != nil {
		return "", nil, err
	}
	return outcome, row.domain(), nil
}

// ReceivedPayment is the order's first payment still RECEIVED (a webhook
// wrote it and signalled, and no workflow has applied it yet); nil when
// there is none. The close asks while the provider cannot answer.
func (db *DB) ReceivedPayment(ctx context.Context, orderNo string) (*seckill.Payment, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("order_no = ? AND status = ?", orderNo, paymentReceived).
		Order("id").Limit(1).Find(&rows).Error; err != nil || len(rows) == 0 {
		return nil, err
	}
	return rows[0].payment(), nil
}
