package mysql

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

type registrationRow struct {
	SessionID int64 `gorm:"primaryKey"`
	UserID    int64 `gorm:"primaryKey"`
	SKUID     int64 `gorm:"column:sku_id"`
	CreatedAt time.Time
}

func (registrationRow) TableName() string { return "registrations" }

// Register records a shopper's registration for a sale, for the item
// skuID (0 in a single-SKU sale). created is false when the shopper had
// registered already (a retry changes nothing, even one naming another
// item: one registration per shopper per sale, the first).
//
// One clock decides the window, the database's: the statement inserts
// only while UTC_TIMESTAMP is in [register_from, register_until), and
// stamps the row with it (seckill.RegistrationClosed otherwise). Its
// SELECT holds a shared lock on the session's row until the commit, so
// the publication of the list (PublishRegistrants, which locks the row)
// waits for a registration in flight and none follows it.
func (db *DB) Register(ctx context.Context, sessionID, userID, skuID int64) (created bool, err error) {
	res := db.gorm.WithContext(ctx).Exec(`INSERT INTO registrations (session_id, user_id, sku_id, created_at)
		SELECT id, ?, ?, UTC_TIMESTAMP(6) FROM sessions
		WHERE id = ? AND UTC_TIMESTAMP(6) >= register_from AND UTC_TIMESTAMP(6) < register_until`, userID, skuID, sessionID)
	switch {
	case isDuplicate(res.Error):
		return false, nil
	case res.Error != nil:
		return false, res.Error
	case res.RowsAffected == 1:
		return true, nil
	}
	if _, err := db.Registration(ctx, sessionID, userID); err == nil {
		return false, nil // registered before the window closed: a retry
	}
	return false, seckill.RegistrationClosed(sessionID)
}

// Registration is a shopper's registration for a sale (ENOTFOUND when
// the shopper has none).
func (db *DB) Registration(ctx context.Context, sessionID, userID int64) (*seckill.Registration, error) {
	var row registrationRow
	err := db.gorm.WithContext(ctx).Where("session_id = ? AND user_id = ?", sessionID, userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "user %d is not registered for session %d", userID, sessionID)
	} else if err != nil {
		return nil, err
	}
	return &seckill.Registration{SessionID: sessionID, UserID: userID, SKUID: row.SKUID, Status: seckill.RegistrationRegistered,
		At: row.CreatedAt.UTC()}, nil
}

// Registrants pages through a sale's registrants in user id order: up to
// limit ids greater than after (0 for the first page), registered before
// register_until by the database's clock (a row stamped later, written
// by hand or by an older version, is not in the list a draw draws). The
// primary key serves it, so a million registrants cost a million index
// reads in pages, never a sort.
func (db *DB) Registrants(ctx context.Context, sessionID, after int64, limit int) ([]seckill.Registrant, error) {
	return registrants(db.gorm.WithContext(ctx), sessionID, after, limit)
}

func registrants(g *gorm.DB, sessionID, after int64, limit int) ([]seckill.Registrant, error) {
	var rows []registrationRow
	err := g.Select("user_id", "sku_id").
		Where("session_id = ? AND user_id > ? AND created_at < (SELECT register_until FROM sessions WHERE id = ?)", sessionID, after, sessionID).
		Order("user_id").Limit(limit).Find(&rows).Error
	out := make([]seckill.Registrant, len(rows))
	for i, r := range rows {
		out[i] = seckill.Registrant{UserID: r.UserID, SKUID: r.SKUID}
	}
	return out, err
}
