package mysql

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// PendingRefunds lists payments waiting for their refund (parked ones
// included), oldest first.
func (db *DB) PendingRefunds(ctx context.Context, limit int) ([]seckill.Refund, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("status = ?", paymentRefundPending).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.Refund, len(rows))
	for i, r := range rows {
		out[i] = r.refund()
	}
	return out, nil
}

// DueRefunds lists the refunds the relay should run now: REFUND_PENDING,
// not parked, due; the longest overdue first, so a refund pushed back by
// its failures never stands in front of a newer one.
func (db *DB) DueRefunds(ctx context.Context, limit int) ([]seckill.Refund, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).
		Where("status = ? AND refund_parked_at IS NULL AND (refund_next_at IS NULL OR refund_next_at <= ?)", paymentRefundPending, db.now()).
		Order("refund_next_at").Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.Refund, len(rows))
	for i, r := range rows {
		out[i] = r.refund()
	}
	return out, nil
}

// ClaimRefund moves a due refund's next attempt lease into the future, so
// that the relay (of any worker) lists it again only if its run is lost.
// False means another relay claimed it first, or it is no longer due.
func (db *DB) ClaimRefund(ctx context.Context, paymentID string, lease time.Duration) (bool, error) {
	now := db.now()
	res := db.gorm.WithContext(ctx).Model(&paymentRow{}).
		Where("payment_id = ? AND status = ? AND refund_parked_at IS NULL AND (refund_next_at IS NULL OR refund_next_at <= ?)",
			paymentID, paymentRefundPending, now).
		Updates(map[string]any{"refund_next_at": now.Add(lease), "updated_at": now})
	return res.RowsAffected == 1, res.Error
}

// maxRefundError is the width of payments.refund_error.
const maxRefundError = 512

// RecordRefundFailure counts a failed refund run: the next run waits the
// policy's backoff, or the refund is parked once it failed policy.Attempts
// times. A refund no longer pending (refunded meanwhile) is left alone. It
// returns where the refund stands.
func (db *DB) RecordRefundFailure(ctx context.Context, paymentID, reason string, policy seckill.RefundRetry) (*seckill.RefundState, error) {
	if len(reason) > maxRefundError {
		reason = reason[:maxRefundError]
	}
	var st *seckill.RefundState
	now := db.now()
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var pay paymentRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("payment_id = ?", paymentID).Take(&pay).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.Errorf(seckill.ENOTFOUND, "payment %s not found", paymentID)
		} else if err != nil {
			return err
		}
		if pay.Status != paymentRefundPending {
			st = refundState(&pay)
			return nil
		}
		pay.RefundAttempts++
		pay.RefundError = reason
		if policy.Park(pay.RefundAttempts) {
			pay.RefundParkedAt = &now
		} else {
			next := now.Add(policy.Backoff(pay.RefundAttempts))
			pay.RefundNextAt = &next
		}
		st = refundState(&pay)
		return tx.Model(&paymentRow{}).Where("id = ?", pay.ID).Updates(map[string]any{
			"refund_attempts": pay.RefundAttempts, "refund_error": pay.RefundError,
			"refund_next_at": pay.RefundNextAt, "refund_parked_at": pay.RefundParkedAt, "updated_at": now,
		}).Error
	})
	return st, err
}

// RetryRefund gives a pending refund (parked or not) a fresh round: due
// now, its failed runs forgotten. NOT_FOUND when the payment has no
// pending refund.
func (db *DB) RetryRefund(ctx context.Context, paymentID string) error {
	now := db.now()
	res := db.gorm.WithContext(ctx).Model(&paymentRow{}).
		Where("payment_id = ? AND status = ?", paymentID, paymentRefundPending).
		Updates(map[string]any{"refund_parked_at": nil, "refund_attempts": 0, "refund_next_at": now, "updated_at": now})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return seckill.Errorf(seckill.ENOTFOUND, "payment %s has no pending refund", paymentID)
	}
	return nil
}

// RefundStates lists the refunds not done, for ops: pending, parked, and
// payments still RECEIVED (not recorded by their workflow yet), oldest
// first.
func (db *DB) RefundStates(ctx context.Context, limit int) ([]seckill.RefundState, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("status IN ?", []string{paymentRefundPending, paymentReceived}).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	nos := make([]string, len(rows))
	for i := range rows {
		nos[i] = rows[i].OrderNo
	}
	var orders []orderRow
	if err := db.gorm.WithContext(ctx).Select("order_no", "currency").Where("order_no IN ?", nos).Find(&orders).Error; err != nil {
		return nil, err
	}
	currency := make(map[string]string, len(orders))
	for _, o := range orders {
		currency[o.OrderNo] = o.Currency
	}
	out := make([]seckill.RefundState, len(rows))
	for i := range rows {
		out[i] = *refundState(&rows[i])
		// In the currency the provider took, else the order's.
		out[i].Currency = cmp.Or(rows[i].Currency, currency[rows[i].OrderNo])
	}
	return out, nil
}

// SessionPayments lists every payment of a session's orders with where
// its refund stands (state "captured" for the payment of a PAID order,
// "refunded" with the provider's refund id), oldest first: the test
// invariant that every refunded payment has exactly one provider refund
// reads it.
func (db *DB) SessionPayments(ctx context.Context, sessionID int64) ([]seckill.RefundState, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("order_no IN (?)",
		db.gorm.Model(&orderRow{}).Select("order_no").Where("session_id = ?", sessionID)).
		Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.RefundState, len(rows))
	for i := range rows {
		out[i] = *refundState(&rows[i])
	}
	return out, nil
}

// RefundCounts counts the refunds not done by state (seckill.RefundDue,
// RefundParked, RefundReceived), for the metrics.
func (db *DB) RefundCounts(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Status string
		Parked bool
		N      int
	}
	if err := db.gorm.WithContext(ctx).Model(&paymentRow{}).
		Select("status, refund_parked_at IS NOT NULL AS parked, COUNT(*) AS n").
		Where("status IN ?", []string{paymentRefundPending, paymentReceived}).
		Group("status, parked").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string]int{seckill.RefundDue: 0, seckill.RefundParked: 0, seckill.RefundReceived: 0}
	for _, r := range rows {
		out[refundStateName(r.Status, r.Parked)] += r.N
	}
	return out, nil
}

// ReceivedPayments lists up to limit payments still RECEIVED after
// olderThan (the webhook wrote them and signalled, and no workflow has
// recorded them yet) that come after the cursor after, oldest first, and
// the cursor to continue from: 0 once the list is done, so that a caller
// walking it pass after pass visits every one, and payments that can
// never settle do not hide the newer ones behind them.
func (db *DB) ReceivedPayments(ctx context.Context, olderThan time.Duration, after int64, limit int) ([]seckill.Payment, int64, error) {
	var rows []paymentRow
	if err := db.gorm.WithContext(ctx).Where("status = ? AND created_at <= ? AND id > ?", paymentReceived, db.now().Add(-olderThan), after).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, err
	}
	out := make([]seckill.Payment, len(rows))
	for i, r := range rows {
		out[i] = *r.payment()
	}
	next := int64(0)
	if len(rows) == limit {
		next = rows[len(rows)-1].ID
	}
	return out, next, nil
}

func refundStateName(status string, parked bool) string {
	switch {
	case status == paymentReceived:
		return seckill.RefundReceived
	case status != paymentRefundPending:
		return strings.ToLower(status) // refunded, or captured: no refund to wait for
	case parked:
		return seckill.RefundParked
	default:
		return seckill.RefundDue
	}
}

func refundState(r *paymentRow) *seckill.RefundState {
	st := &seckill.RefundState{
		Refund:   r.refund(),
		State:    refundStateName(r.Status, r.RefundParkedAt != nil),
		Attempts: r.RefundAttempts, LastError: r.RefundError, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.RefundID != nil {
		st.RefundID = *r.RefundID
	}
	if r.RefundParkedAt != nil {
		st.ParkedAt = r.RefundParkedAt.UTC()
	} else if r.RefundNextAt != nil && r.Status == paymentRefundPending {
		st.NextAttemptAt = r.RefundNextAt.UTC()
	}
	return st
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
		t := status.Refunded()
		if t == nil {
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
		status = t.To
		_, err = transition(tx, &row, t, pay.TraceID, now)
		return err
	})
	return status, err
}
