package mysql

import (
	"context"
	"time"

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
