package mysql

import (
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// itemRow is one item of a sale (00025_session_items.sql): every sale has
// its items here, a single-SKU sale one, and the session row's stock and
// total_stock are their sums, moved in the same transactions.
type itemRow struct {
	SessionID  int64 `gorm:"primaryKey"`
	SKUID      int64 `gorm:"primaryKey;column:sku_id;autoIncrement:false"`
	Position   int
	Title      string
	PriceCents int64
	TotalStock int
	Stock      int
	DrawnStock *int
}

func (itemRow) TableName() string { return "session_items" }

// itemRows are the rows of a new sale's items, in the merchant's order.
func itemRows(s *seckill.Session) []itemRow {
	items := s.AllItems()
	rows := make([]itemRow, len(items))
	for i, it := range items {
		rows[i] = itemRow{SessionID: s.ID, SKUID: it.SKUID, Position: i, Title: it.Title, PriceCents: it.PriceCents,
			TotalStock: it.TotalStock, Stock: it.TotalStock}
	}
	return rows
}

// readItems fills the items of a sale of several (its session row has no
// SKU) and returns each one's database stock by SKU; nil for a single-SKU
// sale, whose one item is the session row itself and costs no read.
func readItems(tx *gorm.DB, s *seckill.Session) (map[int64]int, error) {
	if s.SKUID != 0 {
		return nil, nil
	}
	var rows []itemRow
	if err := tx.Where("session_id = ?", s.ID).Order("position").Find(&rows).Error; err != nil {
		return nil, err
	}
	items, stocks := make([]seckill.Item, len(rows)), make(map[int64]int, len(rows))
	for i, r := range rows {
		items[i] = seckill.Item{SKUID: r.SKUID, Title: r.Title, PriceCents: r.PriceCents, TotalStock: r.TotalStock, DrawnStock: deref(r.DrawnStock)}
		stocks[r.SKUID] = r.Stock
	}
	s.SetItems(items)
	return stocks, nil
}

// takeStock decrements the session's stock and each item's by the units
// taken, each only if it has them: false (nothing changed: the caller
// rolls back) when one has not. The session row first, then the items by
// SKU: every writer locks them in this order.
func takeStock(tx *gorm.DB, sessionID int64, units map[int64]int, now time.Time) (bool, error) {
	return moveStock(tx, sessionID, units, -1, now)
}

// giveBack adds the units back to the session's stock and each item's.
func giveBack(tx *gorm.DB, sessionID int64, units map[int64]int, now time.Time) error {
	_, err := moveStock(tx, sessionID, units, 1, now)
	return err
}

func moveStock(tx *gorm.DB, sessionID int64, units map[int64]int, sign int, now time.Time) (bool, error) {
	total := 0
	for _, n := range units {
		total += n
	}
	if total == 0 {
		return true, nil
	}
	res := tx.Model(&sessionRow{}).Where("id = ? AND stock >= ?", sessionID, max(0, -sign*total)).
		Updates(map[string]any{"stock": gorm.Expr("stock + ?", sign*total), "updated_at": now})
	if res.Error != nil || res.RowsAffected == 0 {
		return false, res.Error
	}
	skus := make([]int64, 0, len(units))
	for sku, n := range units {
		if n != 0 {
			skus = append(skus, sku)
		}
	}
	slices.Sort(skus)
	for _, sku := range skus {
		n := units[sku]
		res := tx.Model(&itemRow{}).Where("session_id = ? AND sku_id = ? AND stock >= ?", sessionID, sku, max(0, -sign*n)).
			UpdateColumn("stock", gorm.Expr("stock + ?", sign*n))
		if res.Error != nil || res.RowsAffected == 0 {
			return false, res.Error
		}
	}
	return true, nil
}
