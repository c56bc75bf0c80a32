package mysql

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// A draw's rows (00015_draw.sql, 00018_draw_sealed.sql): the seed in the
// session row, sealed until drawn_at, and the drawn positions in
// draw_entries, numbered per item (00027_draw_by_item.sql), whose rights
// are granted once each (right_until set only where it is NULL) and
// marked loaded once Redis holds them (00016_rights_loaded.sql).

type drawEntryRow struct {
	SessionID   int64 `gorm:"primaryKey"`
	SKUID       int64 `gorm:"primaryKey;column:sku_id;autoIncrement:false"`
	Position    int   `gorm:"primaryKey"`
	UserID      int64
	RightUntil  *time.Time
	RightLoaded bool
}

func (drawEntryRow) TableName() string { return "draw_entries" }

func (r drawEntryRow) domain() seckill.DrawEntry {
	return seckill.DrawEntry{SKUID: r.SKUID, Position: r.Position, UserID: r.UserID, RightUntil: utcOrZero(r.RightUntil)}
}

// DrawSeal is a draw's seed as stored: sealed by the worker's key, or,
// for a sale seeded before sealing existed and not sealed since, plain.
// Both nil: no seed yet.
func (db *DB) DrawSeal(ctx context.Context, sessionID int64) (sealed, plain []byte, err error) {
	var row sessionRow
	err = db.gorm.WithContext(ctx).Select("id", "draw_seed", "draw_seed_sealed").First(&row, sessionID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, nil, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", sessionID)
	}
	return row.DrawSeedSealed, row.DrawSeed, err
}

// CommitDraw stores a draw's sealed seed and publishes its commitment,
// once: only where no seed is sealed yet and the sale is not drawn (a
// commitment published never changes). It clears a plain seed of a sale
// made before sealing existed. False when a seed was sealed first: the
// caller reads that one.
func (db *DB) CommitDraw(ctx context.Context, sessionID int64, sealed []byte, commitment string) (bool, error) {
	res := db.gorm.WithContext(ctx).Model(&sessionRow{}).
		Where("id = ? AND draw_seed_sealed IS NULL AND drawn_at IS NULL", sessionID).
		Updates(map[string]any{"draw_seed_sealed": sealed, "draw_commitment": commitment, "draw_seed": nil})
	return res.RowsAffected == 1, res.Error
}

// PublishRegistrants fixes a sale's registrant list once registration
// has closed by the database's clock, and publishes its count and digest
// (seckill.RegistrantDigest): once, a published list is never
// recomputed. The session's row is locked first: a registration's INSERT
// … SELECT holds a shared lock on it until it commits, so every
// registration the clock let in is committed (and read) before the list
// is, and none comes after. Before register_until by the database's
// clock: UNAVAILABLE (the caller retries).
func (db *DB) PublishRegistrants(ctx context.Context, sessionID int64) error {
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row struct {
			Published bool
			Open      bool
		}
		err := tx.Raw(`SELECT registrants_digest IS NOT NULL AS published, NOT (UTC_TIMESTAMP(6) >= register_until) AS open
			FROM sessions WHERE id = ? FOR UPDATE`, sessionID).Scan(&row).Error
		switch {
		case err != nil || row.Published:
			return err
		case row.Open:
			return seckill.Errorf(seckill.EUNAVAILABLE, "session %d: registration is still open by the database's clock", sessionID)
		}
		d := seckill.NewRegistrantDigest()
		for after := int64(0); ; {
			page, err := registrants(tx, sessionID, after, registrantPage)
			if err != nil {
				return err
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				d.Add(r)
			}
			after = page[len(page)-1].UserID
		}
		n, digest, err := d.Sum()
		if err != nil {
			return err
		}
		return tx.Model(&sessionRow{}).Where("id = ?", sessionID).
			Updates(map[string]any{"registrants_count": n, "registrants_digest": digest}).Error
	})
}

// registrantPage is how many registrants one read of the publication
// takes.
const registrantPage = 5000

// FixDrawStock records the stock a draw draws, at its first try: the
// sale's, and each item's in a sale of several. A retry after the stock
// changed draws the same places, and verify checks the draw with the
// stock it had (the session, read again, shows them).
func (db *DB) FixDrawStock(ctx context.Context, sessionID int64) error {
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE sessions SET drawn_stock = total_stock WHERE id = ? AND drawn_stock IS NULL", sessionID).Error; err != nil {
			return err
		}
		return tx.Exec("UPDATE session_items SET drawn_stock = total_stock WHERE session_id = ? AND drawn_stock IS NULL", sessionID).Error
	})
}

// RecordDrawEntries writes an item's drawn users at positions first,
// first+1, … INSERT IGNORE: a draw re-run after a crash mid-way computes
// the same order and writes the same rows, finding the ones it wrote.
func (db *DB) RecordDrawEntries(ctx context.Context, sessionID, skuID int64, first int, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("INSERT IGNORE INTO draw_entries (session_id, sku_id, position, user_id) VALUES ")
	args := make([]any, 0, 4*len(users))
	for i, u := range users {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("(?,?,?,?)")
		args = append(args, sessionID, skuID, first+i, u)
	}
	return db.gorm.WithContext(ctx).Exec(b.String(), args...).Error
}

// GrantDrawRights grants an item's first n positions a right until until,
// where none was granted (a re-run grants nothing new), with a
// registration.won event for each right it grants, and returns those n
// entries as recorded: the caller writes them to Redis.
func (db *DB) GrantDrawRights(ctx context.Context, sessionID, skuID int64, n int, until time.Time) ([]seckill.DrawEntry, error) {
	g := db.gorm.WithContext(ctx)
	const first = "session_id = ? AND sku_id = ? AND position <= ?"
	err := g.Transaction(func(tx *gorm.DB) error {
		var todo []drawEntryRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where(first+" AND right_until IS NULL", sessionID, skuID, n).Find(&todo).Error; err != nil || len(todo) == 0 {
			return err
		}
		u := columnTime(until)
		if err := tx.Model(&drawEntryRow{}).Where(first+" AND right_until IS NULL", sessionID, skuID, n).
			Update("right_until", u).Error; err != nil {
			return err
		}
		for i := range todo {
			todo[i].RightUntil = &u
		}
		return recordWon(tx, sessionID, todo, db.now())
	})
	if err != nil {
		return nil, err
	}
	return db.drawEntries(g.Where(first, sessionID, skuID, n))
}

// MarkDrawn sets drawn_at and publishes the seed, once: the last step of
// the draw, which makes a re-run of the draw a no-op.
func (db *DB) MarkDrawn(ctx context.Context, sessionID int64, at time.Time, seed []byte) error {
	return db.gorm.WithContext(ctx).Model(&sessionRow{}).Where("id = ? AND drawn_at IS NULL", sessionID).
		Updates(map[string]any{"drawn_at": at.UTC(), "draw_seed": seed}).Error
}

// DrawEntries is a draw's recorded positions, in (item, position) order.
func (db *DB) DrawEntries(ctx context.Context, sessionID int64) ([]seckill.DrawEntry, error) {
	return db.drawEntries(db.gorm.WithContext(ctx).Where("session_id = ?", sessionID))
}

func (db *DB) drawEntries(q *gorm.DB) ([]seckill.DrawEntry, error) {
	var rows []drawEntryRow
	if err := q.Order("sku_id, position").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.DrawEntry, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// usableRight is the condition of a granted right that may still buy:
// live, and its holder has no order in the sale yet (an order made, paid
// or closed, has used it; a closed order's unit is back in the stock).
const usableRight = `e.session_id = ? AND e.right_until > ? AND NOT EXISTS
	(SELECT 1 FROM orders o WHERE o.user_id = e.user_id AND o.session_id = e.session_id)`

// PassRights hands the units of each item that no usable right covers to
// the item's next positions waiting: with the session row locked (two
// passes never race), it counts the usable rights by item and reads the
// live stock by item (liveStock, Redis: pool SKU → units), and grants
// each item's next max(0, stock − usable) waiting positions, in order, a
// right until now+ttl, each with its registration.won event. Each
// position is granted once (right_until is set only where NULL). It
// returns the granted entries; the caller writes them to Redis and marks
// them loaded (RightsToLoad, RightsLoaded). A paused sale passes nothing;
// a pass that grants bumps rights_version.
//
// A reservation admitted in Redis whose order row is not written yet
// counts as usable and its unit as sold: fewer rights than units for a
// moment, made up by the next pass, never more.
func (db *DB) PassRights(ctx context.Context, sessionID int64, now time.Time, ttl time.Duration,
	liveStock func(context.Context) (map[int64]int, error)) ([]seckill.DrawEntry, error) {
	var granted []seckill.DrawEntry
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row sessionRow
		if err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Select("id", "drawn_at", "paused").First(&row, sessionID).Error; err != nil {
			return err
		}
		if row.DrawnAt == nil {
			return seckill.Errorf(seckill.ECONFLICT, "session %d is not drawn yet", sessionID)
		}
		if row.Paused {
			// Nobody can buy: no right lapses (the resume extends them),
			// none passes.
			return nil
		}
		var counts []struct {
			SKUID int64 `gorm:"column:sku_id"`
			N     int
		}
		if err := tx.Table("draw_entries AS e").Select("e.sku_id, COUNT(*) AS n").Where(usableRight, sessionID, now.UTC()).
			Group("e.sku_id").Scan(&counts).Error; err != nil {
			return err
		}
		usable := make(map[int64]int, len(counts))
		for _, c := range counts {
			usable[c.SKUID] = c.N
		}
		stock, err := liveStock(ctx)
		if err != nil {
			return err
		}
		until := now.Add(ttl).UTC()
		var won []drawEntryRow
		for _, sku := range slices.Sorted(maps.Keys(stock)) {
			n := stock[sku] - usable[sku]
			if n <= 0 {
				continue
			}
			var next []drawEntryRow
			if err := tx.Where("session_id = ? AND sku_id = ? AND right_until IS NULL", sessionID, sku).
				Order("position").Limit(n).Find(&next).Error; err != nil {
				return err
			}
			for _, e := range next {
				res := tx.Model(&drawEntryRow{}).Where("session_id = ? AND sku_id = ? AND position = ? AND right_until IS NULL", sessionID, sku, e.Position).
					Update("right_until", until)
				if res.Error != nil {
					return res.Error
				}
				if res.RowsAffected == 1 {
					e.RightUntil = &until
					granted = append(granted, e.domain())
					won = append(won, e)
				}
			}
		}
		if len(granted) == 0 {
			return nil
		}
		if err := recordWon(tx, sessionID, won, db.now()); err != nil {
			return err
		}
		return tx.Model(&sessionRow{}).Where("id = ?", sessionID).UpdateColumn("rights_version", gorm.Expr("rights_version + 1")).Error
	})
	return granted, err
}

// RightsToLoad is a drawn sale's rights granted, live at now and not yet
// marked loaded into Redis (RightsLoaded): the ones a pass just granted,
// and any a pass that died before Redis left behind.
func (db *DB) RightsToLoad(ctx context.Context, sessionID int64, now time.Time) ([]seckill.DrawEntry, error) {
	return db.drawEntries(db.gorm.WithContext(ctx).
		Where("session_id = ? AND right_loaded = FALSE AND right_until > ?", sessionID, now.UTC()))
}

// RightsLoaded marks rights as held by Redis, after the write.
func (db *DB) RightsLoaded(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error {
	if len(entries) == 0 {
		return nil
	}
	places := make([][]any, len(entries))
	for i, e := range entries {
		places[i] = []any{e.SKUID, e.Position}
	}
	return db.gorm.WithContext(ctx).Model(&drawEntryRow{}).Where("session_id = ? AND (sku_id, position) IN ?", sessionID, places).
		Update("right_loaded", true).Error
}

// HasOrder is whether the shopper has an order in the sale (a drawn
// right used to buy: its holder stays WON after the right's end).
func (db *DB) HasOrder(ctx context.Context, sessionID, userID int64) (bool, error) {
	var n int64
	err := db.gorm.WithContext(ctx).Table("orders").Where("session_id = ? AND user_id = ?", sessionID, userID).Count(&n).Error
	return n > 0, err
}

// UsableRights is a drawn sale's rights that may still buy at now
// (usableRight), in position order.
func (db *DB) UsableRights(ctx context.Context, sessionID int64, now time.Time) ([]seckill.DrawEntry, error) {
	return db.drawEntries(db.gorm.WithContext(ctx).Table("draw_entries AS e").Select("e.*").Where(usableRight, sessionID, now.UTC()))
}
