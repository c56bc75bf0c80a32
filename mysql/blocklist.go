package mysql

import (
	"context"

	"gorm.io/gorm/clause"
)

// Block adds a user to the blocklist (idempotent).
func (db *DB) Block(ctx context.Context, userID int64, reason string) error {
	return db.gorm.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&blockedRow{UserID: userID, Reason: reason, CreatedAt: db.now()}).Error
}

// Unblock removes a user from the blocklist (idempotent).
func (db *DB) Unblock(ctx context.Context, userID int64) error {
	return db.gorm.WithContext(ctx).Delete(&blockedRow{}, userID).Error
}

// BlockedUsers lists every blocked user id.
func (db *DB) BlockedUsers(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := db.gorm.WithContext(ctx).Model(&blockedRow{}).Pluck("user_id", &ids).Error
	return ids, err
}
