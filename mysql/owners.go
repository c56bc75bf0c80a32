package mysql

import "context"

// OrderOwners returns the owner (user id) of every order row of a session,
// by order number, whatever its status: the drills' referee, which checks
// that each row answers exactly one purchase the shopper was told about.
func (db *DB) OrderOwners(ctx context.Context, sessionID int64) (map[string]int64, error) {
	var rows []struct {
		OrderNo string
		UserID  int64
	}
	if err := db.gorm.WithContext(ctx).Model(&orderRow{}).Select("order_no", "user_id").
		Where("session_id = ?", sessionID).Find(&rows).Error; err != nil {
		return nil, err
	}
	owners := make(map[string]int64, len(rows))
	for _, r := range rows {
		owners[r.OrderNo] = r.UserID
	}
	return owners, nil
}
