package mysql

import (
	"context"

	"github.com/seckill/seckill"
)

// PaymentSeen reports whether a payment with this payment id or event id
// was applied already (the webhook answers replays without a signal). A
// payment only RECEIVED is not seen: its delivery is signalled again.
func (db *DB) PaymentSeen(ctx context.Context, paymentID, eventID string) (bool, error) {
	var n int64
	err := db.gorm.WithContext(ctx).Model(&paymentRow{}).
		Where("(payment_id = ? OR event_id = ?) AND status <> ?", paymentID, eventID, paymentReceived).Count(&n).Error
	return n > 0, err
}

// RecordPayment writes a payment as RECEIVED before the webhook signals it
// to the order's workflow. The signal lives only in Temporal; this row
// outlives a workflow that cannot record the payment (MySQL down past its
// retries, the run terminated or lost), and the refund relay settles it
// once no workflow runs for the order. Idempotent: a payment (or event)
// already written changes nothing.
func (db *DB) RecordPayment(ctx context.Context, p *seckill.Payment) error {
	now := db.now()
	err := db.gorm.WithContext(ctx).Create(&paymentRow{
		PaymentID: p.PaymentID, EventID: p.EventID, OrderNo: p.OrderNo, AmountCents: p.AmountCents,
		Status: paymentReceived, TraceID: p.TraceID, CreatedAt: now, UpdatedAt: now,
	}).Error
	if isDuplicate(err) {
		return nil
	}
	return err
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
	r := rows[0]
	return &seckill.Payment{EventID: r.EventID, PaymentID: r.PaymentID, OrderNo: r.OrderNo, AmountCents: r.AmountCents, TraceID: r.TraceID}, nil
}
