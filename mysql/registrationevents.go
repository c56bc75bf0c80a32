package mysql

import (
	"context"
	"encoding/json"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// A draw's registration events (seckill.EventRegistrationWon, …Lost):
// written in the transaction that grants the right, or that advances the
// lost events' cursor, so each exists exactly once.

// registrationEventPrefix starts the type of every registration event.
const registrationEventPrefix = "registration."

// eventBatch bounds one INSERT of events (a draw grants thousands of
// rights at once; MySQL takes at most 65,535 placeholders a statement).
const eventBatch = 1000

// recordRegistrationEvents writes one event of typ per registration, in tx.
func recordRegistrationEvents(tx *gorm.DB, typ seckill.EventType, regs []seckill.Registration, at time.Time) error {
	if len(regs) == 0 {
		return nil
	}
	rows := make([]*eventRow, len(regs))
	for i := range regs {
		snapshot, err := json.Marshal(&regs[i])
		if err != nil {
			return err
		}
		rows[i] = &eventRow{Type: string(typ), OrderNo: seckill.RegistrationEventKey(regs[i].SessionID, regs[i].UserID),
			OrderJSON: string(snapshot), APIVersion: seckill.EventAPIVersion, CreatedAt: at}
	}
	return tx.CreateInBatches(rows, eventBatch).Error
}

// recordWon writes the registration.won events of the rights just granted
// to entries, with each registrant's registration time.
func recordWon(tx *gorm.DB, sessionID int64, entries []drawEntryRow, at time.Time) error {
	if len(entries) == 0 {
		return nil
	}
	users := make([]int64, len(entries))
	for i, e := range entries {
		users[i] = e.UserID
	}
	var regs []registrationRow
	for i := 0; i < len(users); i += eventBatch {
		var page []registrationRow
		if err := tx.Where("session_id = ? AND user_id IN ?", sessionID, users[i:min(i+eventBatch, len(users))]).
			Find(&page).Error; err != nil {
			return err
		}
		regs = append(regs, page...)
	}
	registered := make(map[int64]time.Time, len(regs))
	for _, r := range regs {
		registered[r.UserID] = r.CreatedAt.UTC()
	}
	won := make([]seckill.Registration, len(entries))
	for i, e := range entries {
		won[i] = seckill.Registration{SessionID: sessionID, UserID: e.UserID, SKUID: e.SKUID, Status: seckill.RegistrationWon,
			At: registered[e.UserID], RightUntil: columnTime(utcOrZero(e.RightUntil))}
	}
	return recordRegistrationEvents(tx, seckill.EventRegistrationWon, won, at)
}

// RecordLostEvents writes the registration.lost events of the next up to
// limit registrants of a drawn sale, in user id order, who have no order
// in it (never drawn, waitlisted to the end, or a right that lapsed
// unused), and returns how many: 0 once every registrant is done. A
// cursor in the session's row (lost_events_after), moved in the same
// transaction under the row's lock, makes each registrant's event exist
// once, however often a page is retried or two workers race.
func (db *DB) RecordLostEvents(ctx context.Context, sessionID int64, limit int) (int, error) {
	n := 0
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var s struct {
			LostAfter int64
			Drawn     bool
		}
		if err := tx.Raw(`SELECT lost_events_after AS lost_after, drawn_at IS NOT NULL AS drawn
			FROM sessions WHERE id = ? FOR UPDATE`, sessionID).Scan(&s).Error; err != nil {
			return err
		}
		if !s.Drawn {
			return seckill.Errorf(seckill.ECONFLICT, "session %d is not drawn: nobody has lost yet", sessionID)
		}
		var rows []registrationRow
		if err := tx.Raw(`SELECT r.session_id, r.user_id, r.sku_id, r.created_at FROM registrations r
			WHERE r.session_id = ? AND r.user_id > ?
			AND r.created_at < (SELECT register_until FROM sessions WHERE id = ?)
			AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.user_id = r.user_id AND o.session_id = r.session_id)
			ORDER BY r.user_id LIMIT ?`, sessionID, s.LostAfter, sessionID, limit).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		lost := make([]seckill.Registration, len(rows))
		for i, r := range rows {
			lost[i] = seckill.Registration{SessionID: sessionID, UserID: r.UserID, SKUID: r.SKUID, Status: seckill.RegistrationLost,
				At: r.CreatedAt.UTC()}
		}
		if err := recordRegistrationEvents(tx, seckill.EventRegistrationLost, lost, db.now()); err != nil {
			return err
		}
		n = len(rows)
		return tx.Exec("UPDATE sessions SET lost_events_after = ? WHERE id = ?", rows[n-1].UserID, sessionID).Error
	})
	return n, err
}
