package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// SessionSnapshot reads the MySQL side of a session for reconcile in one
// read-only REPEATABLE READ transaction: InnoDB fixes the transaction's
// read view at its first read (the session row), and every later query
// sees that same instant, so a sale in motion cannot make the counts
// disagree with each other or with the statuses of orderNos. Overdue counts
// the WAIT_PAY orders whose pay deadline is before overdueBefore.
func (db *DB) SessionSnapshot(ctx context.Context, sessionID int64, orderNos []string, overdueBefore time.Time) (*seckill.DBSnapshot, error) {
	var snap *seckill.DBSnapshot
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		snap, err = sessionSnapshot(tx, sessionID, orderNos, overdueBefore)
		return err
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	return snap, err
}

func sessionSnapshot(g *gorm.DB, sessionID int64, orderNos []string, overdueBefore time.Time) (*seckill.DBSnapshot, error) {
	var sess sessionRow
	if err := g.First(&sess, sessionID).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", sessionID)
	} else if err != nil {
		return nil, err
	}
	snap := &seckill.DBSnapshot{Session: sess.domain(), DBStock: sess.Stock, Orders: map[seckill.Status]int{}}
	var err error
	if snap.ItemStock, err = readItems(g, snap.Session); err != nil {
		return nil, err
	}
	if snap.ItemStock != nil {
		snap.ItemHeld = map[int64]int{}
	}

	var byStatus []struct {
		Status string
		SKUID  int64 `gorm:"column:sku_id"`
		N      int
		Qty    int
	}
	if err := g.Model(&orderRow{}).Select("status, sku_id, COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS qty").
		Where("session_id = ?", sessionID).Group("status, sku_id").Scan(&byStatus).Error; err != nil {
		return nil, err
	}
	for _, b := range byStatus {
		st := seckill.Status(b.Status)
		snap.Orders[st] += b.N
		if st.HoldsStock() {
			snap.HeldQty += b.Qty
			if snap.ItemHeld != nil {
				snap.ItemHeld[b.SKUID] += b.Qty
			}
		}
	}
	holding := seckill.Holding()

	if err := g.Raw(`SELECT COALESCE(MAX(units), 0) FROM (
		SELECT SUM(quantity) AS units FROM orders WHERE session_id = ? AND status IN ? GROUP BY user_id) u`,
		sessionID, holding).Scan(&snap.MaxUserUnits).Error; err != nil {
		return nil, err
	}
	var paidMismatch int
	if err := g.Raw(`SELECT COUNT(*) FROM orders o WHERE o.session_id = ? AND o.status = ? AND
		(SELECT COUNT(*) FROM payments p WHERE p.order_no = o.order_no AND p.status = ?) <> 1`,
		sessionID, seckill.StatusPaid, paymentCaptured).Scan(&paidMismatch).Error; err != nil {
		return nil, err
	}
	snap.PaidPaymentMismatch = paidMismatch
	var ledgerMismatch int
	if err := g.Raw(`SELECT COUNT(*) FROM orders o WHERE o.session_id = ? AND NOT EXISTS (
		SELECT 1 FROM order_ledger l WHERE l.order_no = o.order_no AND l.to_status = o.status AND l.trace_id <> ''
		AND l.id = (SELECT MAX(id) FROM order_ledger l2 WHERE l2.order_no = o.order_no))`,
		sessionID).Scan(&ledgerMismatch).Error; err != nil {
		return nil, err
	}
	snap.LedgerMismatch = ledgerMismatch
	var refunds int64
	if err := g.Raw(`SELECT COUNT(*) FROM payments p JOIN orders o ON o.order_no = p.order_no
		WHERE o.session_id = ? AND p.status = ?`, sessionID, paymentRefundPending).Scan(&refunds).Error; err != nil {
		return nil, err
	}
	snap.RefundsPending = int(refunds)
	var overdue int64
	if err := g.Model(&orderRow{}).Where("session_id = ? AND status = ? AND pay_deadline < ?",
		sessionID, seckill.StatusWaitPay, overdueBefore.UTC()).Count(&overdue).Error; err != nil {
		return nil, err
	}
	snap.Overdue = int(overdue)
	var registrants int64
	if err := g.Model(&registrationRow{}).Where("session_id = ?", sessionID).Count(&registrants).Error; err != nil {
		return nil, err
	}
	snap.Registrants = int(registrants)
	snap.Statuses, err = orderStatuses(g, orderNos)
	return snap, err
}

// OrderStatuses returns the status of each of the given orders that has a row.
func (db *DB) OrderStatuses(ctx context.Context, orderNos []string) (map[string]seckill.Status, error) {
	return orderStatuses(db.gorm.WithContext(ctx), orderNos)
}

func orderStatuses(g *gorm.DB, orderNos []string) (map[string]seckill.Status, error) {
	out := make(map[string]seckill.Status, len(orderNos))
	const chunk = 500
	for i := 0; i < len(orderNos); i += chunk {
		part := orderNos[i:min(i+chunk, len(orderNos))]
		var rows []orderRow
		if err := g.Select("order_no, status").Where("order_no IN ?", part).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.OrderNo] = seckill.Status(r.Status)
		}
	}
	return out, nil
}
