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
	CreatedAt time.Time
}

func (registrationRow) TableName() string { return "registrations" }

// Register records a shopper's registration for a sale. created is false
// when the shopper had registered already (a retry changes nothing).
func (db *DB) Register(ctx context.Context, sessionID, userID int64) (created bool, err error) {
	err = db.gorm.WithContext(ctx).Create(&registrationRow{SessionID: sessionID, UserID: userID, CreatedAt: db.now()}).Error
	if isDuplicate(err) {
		return false, nil
	}
	return err == nil, err
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
	return &seckill.Registration{SessionID: sessionID, UserID: userID, Status: seckill.RegistrationRegistered, At: row.CreatedAt.UTC()}, nil
}

// Registrants pages through a sale's registrants in user id order: up to
// limit ids greater than after (0 for the first page). The primary key
// serves it, so a million registrants cost a million index reads in
// pages, never a sort.
func (db *DB) Registrants(ctx context.Context, sessionID, after int64, limit int) ([]int64, error) {
	var ids []int64
	err := db.gorm.WithContext(ctx).Model(&registrationRow{}).
		Where("session_id = ? AND user_id > ?", sessionID, after).Order("user_id").Limit(limit).Pluck("user_id", &ids).Error
	return ids, err
}
