package mysql

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// ChangeSession applies an operator's change to a session and records it in
// the session's audit ledger, in one transaction that holds the session's
// row lock (order creation and closing wait for it a moment, and see the new
// stock after). A change whose request id the ledger already holds is not
// applied again: applied is false and the session is returned as it is.
//
// ActionAddStock changes only MySQL here; the caller then adds the units in
// Redis (redis.Gate.AddStock, idempotent by the same request id). MySQL
// first: until Redis follows, the gate holds fewer units than the
// database, so it can only undersell for a moment, never sell a unit the
// database does not have.
func (db *DB) ChangeSession(ctx context.Context, ch *seckill.SessionChange) (sess *seckill.Session, applied bool, err error) {
	if err := ch.Check(); err != nil {
		return nil, false, err
	}
	now := db.now()
	ch.At = now
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row sessionRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).First(&row, ch.SessionID).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.Errorf(seckill.ENOTFOUND, "session %d not found", ch.SessionID)
		} else if err != nil {
			return err
		}
		if seen, err := auditSeen(tx, ch); err != nil || seen {
			sess = row.domain()
			if err == nil {
				_, err = readItems(tx, sess)
			}
			return err
		}
		pausedAt := row.PausedAt
		s, err := change(tx, &row, ch, now)
		if err != nil {
			return err
		}
		resumedDraw := pausedAt != nil && !row.Paused && row.DrawnAt != nil
		if resumedDraw {
			row.RightsVersion++
		}
		row.UpdatedAt = now
		if err := tx.Save(&row).Error; err != nil {
			return err
		}
		if resumedDraw {
			if err := extendRights(tx, &row, *pausedAt, now); err != nil {
				return err
			}
		}
		if err := audit(tx, ch); err != nil {
			return err
		}
		sess, applied = row.domain(), true
		sess.Items = s.Items
		return nil
	})
	return sess, applied, err
}

// auditSeen reports whether the session's audit ledger holds ch's request
// id already (a retry: nothing is applied again), and refuses the id with
// IDEMPOTENCY_MISMATCH when it was used for another change.
func auditSeen(tx *gorm.DB, ch *seckill.SessionChange) (bool, error) {
	var rows []sessionAuditRow
	if err := tx.Where("session_id = ? AND request_id = ?", ch.SessionID, ch.RequestID).Limit(1).Find(&rows).Error; err != nil {
		return false, err
	}
	if len(rows) == 0 {
		return false, nil
	}
	var first seckill.SessionChange
	if err := json.Unmarshal([]byte(rows[0].Detail), &first); err != nil {
		return false, err
	}
	if !first.SameRequest(ch) {
		return false, seckill.Errorf(seckill.EIDEMPOTENCY,
			"Idempotency-Key %q was used for another change of session %d (%s)", ch.RequestID, ch.SessionID, first.Action)
	}
	return true, nil
}

// audit records ch in its session's audit ledger (inside the change's
// transaction, stamped ch.At).
func audit(tx *gorm.DB, ch *seckill.SessionChange) error {
	detail, err := json.Marshal(ch)
	if err != nil {
		return err
	}
	return tx.Create(&sessionAuditRow{SessionID: ch.SessionID, Action: string(ch.Action), Actor: ch.Actor,
		ActorRole: string(ch.ActorRole), FromAddr: ch.From, RequestID: ch.RequestID, Detail: string(detail), CreatedAt: ch.At}).Error
}

// change applies ch to the locked row and its items by the domain's rules
// (SessionChange.ApplyTo), and returns the session after it: a single-SKU
// sale's item row follows its session row, a sale of several's stock goes
// to the item named.
func change(tx *gorm.DB, row *sessionRow, ch *seckill.SessionChange, now time.Time) (*seckill.Session, error) {
	s := row.domain()
	if _, err := readItems(tx, s); err != nil {
		return nil, err
	}
	added, err := ch.ApplyTo(s, now)
	if err != nil {
		return nil, err
	}
	if s.Several() {
		if added > 0 {
			err = tx.Model(&itemRow{}).Where("session_id = ? AND sku_id = ?", s.ID, ch.SKUID).Updates(map[string]any{
				"total_stock": gorm.Expr("total_stock + ?", added), "stock": gorm.Expr("stock + ?", added)}).Error
		}
	} else if ch.Action == seckill.ActionAddStock || ch.Action == seckill.ActionUpdate {
		err = tx.Model(&itemRow{}).Where("session_id = ? AND sku_id = ?", s.ID, s.SKUID).Updates(map[string]any{
			"title": s.Title, "price_cents": s.PriceCents, "total_stock": s.TotalStock, "stock": gorm.Expr("stock + ?", added)}).Error
	}
	if err != nil {
		return nil, err
	}
	row.Title, row.PriceCents, row.PerUserLimit, row.StartAt, row.EndAt = s.Title, s.PriceCents, s.PerUserLimit, s.StartAt, s.EndAt
	row.Paused, row.PausedAt, row.TotalStock = s.Paused, nullTime(s.PausedAt), s.TotalStock
	row.Mode, row.RegisterFrom, row.RegisterUntil = string(cmp.Or(s.Mode, seckill.ModeFirstCome)), nullTime(s.RegisterFrom), nullTime(s.RegisterUntil)
	row.RightTTLSeconds = s.RightTTLSeconds
	row.Stock += added
	return s, nil
}

// extendRights gives a drawn sale's rights back the time a pause took
// from them, at its resume: each right that could still buy when the
// pause began ends later by the time paused since the later of the pause
// and its grant (seckill.Session.RightEnd, the rule the registration
// answer shows during the pause). They are marked to be loaded into Redis
// again (the caller and the next pass write the new ends; Redis keeps the
// later end and never a used right's mark).
func extendRights(tx *gorm.DB, row *sessionRow, pausedAt, now time.Time) error {
	return tx.Exec(`UPDATE draw_entries e SET e.right_loaded = FALSE, e.right_until = TIMESTAMPADD(MICROSECOND,
		GREATEST(0, TIMESTAMPDIFF(MICROSECOND, GREATEST(?, e.right_until - INTERVAL ? SECOND), ?)), e.right_until)
		WHERE `+usableRight, pausedAt.UTC(), row.RightTTLSeconds, now.UTC(), row.ID, pausedAt.UTC()).Error
}

// SessionAudit returns a session's audit ledger, oldest first.
func (db *DB) SessionAudit(ctx context.Context, sessionID int64) ([]seckill.SessionChange, error) {
	var rows []sessionAuditRow
	if err := db.gorm.WithContext(ctx).Where("session_id = ?", sessionID).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.SessionChange, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal([]byte(r.Detail), &out[i]); err != nil {
			return nil, err
		}
		out[i].ActorRole, out[i].At = seckill.Role(r.ActorRole), r.CreatedAt.UTC()
	}
	return out, nil
}
