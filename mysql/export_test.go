package mysql

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/seckill/seckill"
)

// CreateOneForTest is CreateOrder without the batcher, for the benchmark
// that measures what batching buys.
func (db *DB) CreateOneForTest(ctx context.Context, req *seckill.OrderRequest, payDeadline time.Time) (*seckill.Order, error) {
	return db.createOne(ctx, req, payDeadline)
}

// StopClockForTest makes every change stamp at, as if it all happened in
// one millisecond.
func (db *DB) StopClockForTest(at time.Time) { db.now = func() time.Time { return columnTime(at) } }

// NamesCharset is namesCharset, for its test.
var NamesCharset = namesCharset

// CloseRolledBackForTest closes an order in a transaction that then rolls
// back, as one whose later statement failed would.
func (db *DB) CloseRolledBackForTest(ctx context.Context, req *seckill.OrderRequest) error {
	rollBack := errors.New("rolled back on purpose")
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := closeInTx(tx, []*closeCall{{req: req, reason: "test"}}, db.now()); err != nil {
			return err
		}
		return rollBack
	})
	if errors.Is(err, rollBack) {
		return nil
	}
	return err
}

// EventfulChangesForTest counts the ledger rows of changes that emit an
// event, by order number.
func (db *DB) EventfulChangesForTest(ctx context.Context) (map[string][]seckill.EventType, error) {
	var rows []ledgerRow
	if err := db.gorm.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string][]seckill.EventType{}
	for _, r := range rows {
		if typ, ok := seckill.EventFor(seckill.Status(r.ToStatus)); ok {
			out[r.OrderNo] = append(out[r.OrderNo], typ)
		}
	}
	return out, nil
}

// ExplainDueEventsForTest returns the index each table of DueEvents'
// query reads (by its alias in the query: e, p) and how many rows MariaDB
// expects to read of e.
func (db *DB) ExplainDueEventsForTest(ctx context.Context) (keys map[string]string, rowsOfE int64, err error) {
	var plan []struct {
		Table string
		Key   *string
		Rows  int64
	}
	if err := db.gorm.WithContext(ctx).Raw("EXPLAIN "+dueEventsSQL, db.now(), 200).Scan(&plan).Error; err != nil {
		return nil, 0, err
	}
	keys = map[string]string{}
	for _, p := range plan {
		if p.Key != nil {
			keys[p.Table] = *p.Key
		}
		if p.Table == "e" {
			rowsOfE = p.Rows
		}
	}
	return keys, rowsOfE, nil
}

// RawForTest runs a statement through GORM, as the store's own do.
func (db *DB) RawForTest(ctx context.Context, sql string, args ...any) error {
	var n int64
	return db.gorm.WithContext(ctx).Raw(sql, args...).Scan(&n).Error
}
