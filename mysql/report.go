package mysql

import (
	"context"

	"github.com/seckill/seckill"
)

// SessionSnapshot reads the MySQL side of a session for reconcile.
func (db *DB) SessionSnapshot(ctx context.Context, sessionID int64) (*seckill.DBSnapshot, error) {
	s, stock, err := db.Session(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	snap := &seckill.DBSnapshot{Session: s, DBStock: stock, Orders: map[seckill.Status]int{}}
	g := db.gorm.WithContext(ctx)

	var byStatus []struct {
		Status string
		N      int
		Qty    int
	}
	if err := g.Model(&orderRow{}).Select("status, COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS qty").
		Where("session_id = ?", sessionID).Group("status").Scan(&byStatus).Error; err != nil {
		return nil, err
	}
	for _, b := range byStatus {
		st := seckill.Status(b.Status)
		snap.Orders[st] = b.N
		if st.HoldsStock() {
			snap.HeldQty += b.Qty
		}
	}
	holding := []seckill.Status{seckill.StatusWaitPay, seckill.StatusPaid}

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
	return snap, nil
}

// OrderStatuses returns the status of each of the given orders that has a row.
func (db *DB) OrderStatuses(ctx context.Context, orderNos []string) (map[string]seckill.Status, error) {
	out := make(map[string]seckill.Status, len(orderNos))
	const chunk = 500
	for i := 0; i < len(orderNos); i += chunk {
		part := orderNos[i:min(i+chunk, len(orderNos))]
		var rows []orderRow
		if err := db.gorm.WithContext(ctx).Select("order_no, status").Where("order_no IN ?", part).Find(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.OrderNo] = seckill.Status(r.Status)
		}
	}
	return out, nil
}
