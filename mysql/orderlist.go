package mysql

import (
	"cmp"
	"context"
	"errors"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// FindOrders returns up to limit of the orders f picks, newest first,
// older than the order whose row id is before (0: from the newest), and
// the row id to continue after (0 when there is no more). Rows are ordered
// by id, which grows with creation; orders_session_newest and
// orders_user_newest answer a sale's or a user's page without a sort.
func (db *DB) FindOrders(ctx context.Context, f seckill.OrderFilter, before int64, limit int) ([]*seckill.Order, int64, error) {
	q := db.gorm.WithContext(ctx).Model(&orderRow{})
	if f.SessionID > 0 {
		q = q.Where("session_id = ?", f.SessionID)
	}
	if f.UserID > 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if !f.From.IsZero() {
		q = q.Where("created_at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("created_at < ?", f.To.UTC())
	}
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

// OrderRecord reads an order with its ledger (every status change), the
// payments received for it (the provider is its checkout's), their
// refunds and the events recorded of it; NOT_FOUND for an unknown order.
func (db *DB) OrderRecord(ctx context.Context, orderNo string) (*seckill.OrderRecord, error) {
	o, err := db.Order(ctx, orderNo)
	if err != nil {
		return nil, err
	}
	rec := &seckill.OrderRecord{Order: o, History: []seckill.OrderChange{}, Payments: []seckill.PaymentRecord{},
		Refunds: []seckill.RefundState{}, Events: []seckill.Event{}}
	g := db.gorm.WithContext(ctx)
	var ledger []ledgerRow
	if err := g.Where("order_no = ?", orderNo).Order("id").Find(&ledger).Error; err != nil {
		return nil, err
	}
	for _, l := range ledger {
		rec.History = append(rec.History, seckill.OrderChange{At: l.CreatedAt.UTC(),
			From: seckill.Status(l.FromStatus), To: seckill.Status(l.ToStatus), Reason: l.Reason})
	}
	var checkout checkoutRow
	err = g.Where("order_no = ?", orderNo).Take(&checkout).Error
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, err
	}
	var pays []paymentRow
	if err := g.Where("order_no = ?", orderNo).Order("id").Find(&pays).Error; err != nil {
		return nil, err
	}
	for i, p := range pays {
		// In the currency the provider took, else the order's.
		currency := cmp.Or(p.Currency, o.Currency)
		rec.Payments = append(rec.Payments, seckill.PaymentRecord{Provider: checkout.Provider, PaymentID: p.PaymentID,
			Status: p.Status, AmountCents: p.AmountCents, Currency: currency, At: p.CreatedAt.UTC()})
		if p.Status == paymentRefundPending || p.Status == paymentRefunded {
			st := refundState(&pays[i])
			st.Currency = currency
			rec.Refunds = append(rec.Refunds, *st)
		}
	}
	var events []eventRow
	if err := g.Where("order_no = ?", orderNo).Order("id").Find(&events).Error; err != nil {
		return nil, err
	}
	for i := range events {
		rec.Events = append(rec.Events, events[i].domain())
	}
	return rec, nil
}
