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
