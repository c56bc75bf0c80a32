package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// CreateSession validates s, stores it with its whole stock in the database
// and sets s.ID.
//
// by, when not nil, is the operator who creates it: recorded as the first
// row of the session's audit ledger (ActionCreate), in the same
// transaction. With a Fingerprint, by.RequestID is the client's
// Idempotency-Key: a retry fills s with the sale the key created instead
// of creating another.
func (db *DB) CreateSession(ctx context.Context, s *seckill.Session, by *seckill.SessionChange) error {
	if err := s.Validate(); err != nil {
		return err
	}
	// The session as stored, defaults included: the create's answer shows
	// it as a read does.
	s.Mode, s.RequireTicket = cmp.Or(s.Mode, seckill.ModeFirstCome), s.RequireTicket || s.RequireCaptcha
	now := db.now()
	row := sessionRow{
		SKUID: s.SKUID, Title: s.Title, PriceCents: s.PriceCents, Currency: s.Currency,
		TotalStock: s.TotalStock, Stock: s.TotalStock, PerUserLimit: s.PerUserLimit,
		StartAt: s.StartAt.UTC(), EndAt: s.EndAt.UTC(), RequireTicket: s.RequireTicket || s.RequireCaptcha, RequireCaptcha: s.RequireCaptcha,
		Mode: string(cmp.Or(s.Mode, seckill.ModeFirstCome)), RegisterFrom: nullTime(s.RegisterFrom), RegisterUntil: nullTime(s.RegisterUntil),
		RightTTLSeconds: s.RightTTLSeconds,
		CreatedAt:       now, UpdatedAt: now,
	}
	keyed := by != nil && by.Fingerprint != ""
	if keyed {
		if done, err := db.createdBefore(ctx, s, by); done || err != nil {
			return err
		}
	}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		s.ID = row.ID
		if err := tx.Create(itemRows(s)).Error; err != nil {
			return err
		}
		if by == nil {
			return nil
		}
		by.SessionID, by.Action, by.At = row.ID, seckill.ActionCreate, now
		if keyed {
			if err := tx.Create(&sessionCreateKeyRow{RequestID: by.RequestID, SessionID: row.ID,
				Fingerprint: by.Fingerprint, CreatedAt: now}).Error; err != nil {
				return err
			}
		}
		return audit(tx, by)
	})
	if keyed && isDuplicate(err) {
		// A concurrent create with the same key committed first: this one
		// rolled back whole, and answers with that one's sale.
		if done, err := db.createdBefore(ctx, s, by); done || err != nil {
			return err
		}
	}
	return err
}

// createdBefore fills s with the sale by's Idempotency-Key created, if
// any (done); IDEMPOTENCY_MISMATCH when the key came with another body.
func (db *DB) createdBefore(ctx context.Context, s *seckill.Session, by *seckill.SessionChange) (done bool, err error) {
	var keys []sessionCreateKeyRow
	if err := db.gorm.WithContext(ctx).Where("request_id = ?", by.RequestID).Limit(1).Find(&keys).Error; err != nil || len(keys) == 0 {
		return false, err
	}
	if keys[0].Fingerprint != by.Fingerprint {
		return false, seckill.Errorf(seckill.EIDEMPOTENCY, "Idempotency-Key %q created session %d with another body", by.RequestID, keys[0].SessionID)
	}
	sess, _, err := db.Session(ctx, keys[0].SessionID)
	if err != nil {
		return false, err
	}
	*s = *sess
	return true, nil
}

// Session returns one session and its current database stock.
func (db *DB) Session(ctx context.Context, id int64) (*seckill.Session, int, error) {
	var row sessionRow
	err := db.gorm.WithContext(ctx).First(&row, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, 0, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	} else if err != nil {
		return nil, 0, err
	}
	s := row.domain()
	if _, err := readItems(db.gorm.WithContext(ctx), s); err != nil {
		return nil, 0, err
	}
	return s, row.Stock, nil
}

// PreheatFigures returns a session, its database stock (the sale's, and
// each item's by SKU) and the request ids of the operators' stock changes
// that stock holds, from one consistent snapshot: what the preheat loads into Redis (redis.Gate.PreheatHolding),
// so that an add-stock racing it is counted exactly once. It first marks
// the session preheated (preheated_at, once), which fixes its mode: a
// change of mode committed before the mark is in the snapshot, one after
// it is refused (SessionChange.ApplyTo).
func (db *DB) PreheatFigures(ctx context.Context, id int64) (sess *seckill.Session, stock int, items map[int64]int, applied []string, err error) {
	if err := db.gorm.WithContext(ctx).Model(&sessionRow{}).Where("id = ? AND preheated_at IS NULL", id).
		UpdateColumn("preheated_at", db.now()).Error; err != nil {
		return nil, 0, nil, nil, err
	}
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row sessionRow
		err := tx.First(&row, id).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
		} else if err != nil {
			return err
		}
		sess, stock = row.domain(), row.Stock
		if items, err = readItems(tx, sess); err != nil {
			return err
		}
		return tx.Model(&sessionAuditRow{}).Where("session_id = ? AND action = ?", id, seckill.ActionAddStock).
			Order("id").Pluck("request_id", &applied).Error
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	return sess, stock, items, applied, err
}

// OpenSessions returns up to limit sessions that have not ended at now
// (on sale or upcoming), the soonest to start first. The shop lists them;
// the API caches the answer, so this runs about once a second per process
// whatever the traffic.
func (db *DB) OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error) {
	var rows []sessionRow
	err := db.gorm.WithContext(ctx).
		Where("end_at > ?", now.UTC()).
		Order("start_at, id").
		Limit(limit).
		Find(&rows).Error
	if err != nil {
		return nil, err
	}
	out := make([]*seckill.Session, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
		if _, err := readItems(db.gorm.WithContext(ctx), out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}
