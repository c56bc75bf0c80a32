package activities

import (
	"context"

	"github.com/seckill/seckill"
)

// ReconcileGate is the Redis side of reconcile.
type ReconcileGate interface {
	Sessions(ctx context.Context) ([]int64, error)
	seckill.RedisSnapshotter
}

// Reconciler runs reconcile for the scheduled ReconcileWorkflow.
type Reconciler struct {
	Store seckill.DBSnapshotter
	Gate  ReconcileGate
}

// ReconcileAll reconciles every preheated session.
func (a *Reconciler) ReconcileAll(ctx context.Context) ([]seckill.Report, error) {
	ids, err := a.Gate.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]seckill.Report, 0, len(ids))
	for _, id := range ids {
		r, err := seckill.Reconcile(ctx, a.Store, a.Gate, id)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			continue // preheated in Redis, unknown to this database
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, nil
}
