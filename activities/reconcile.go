package activities

import (
	"context"
	"slices"
	"time"

	"github.com/seckill/seckill"
)

// ReconcileGate is the Redis side of reconcile.
type ReconcileGate interface {
	Sessions(ctx context.Context) ([]int64, error)
	seckill.RedisSnapshotter
}

// ReconcileStore is the MySQL side of reconcile.
type ReconcileStore interface {
	seckill.DBSnapshotter
	OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error)
}

// Reconciler runs reconcile for the scheduled ReconcileWorkflow and for the
// worker's sale metrics.
type Reconciler struct {
	Store ReconcileStore
	Gate  ReconcileGate
}

// ReconcileAll reconciles every preheated session.
func (a *Reconciler) ReconcileAll(ctx context.Context) ([]seckill.Report, error) {
	ids, err := a.Gate.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	return a.reconcile(ctx, ids)
}

// ReconcileRecent reconciles the preheated sessions that have not ended
// before since (on sale, upcoming, or recently ended), at most limit: the
// ones whose orders still move. A session not preheated yet has no Redis
// side to compare and is left out.
func (a *Reconciler) ReconcileRecent(ctx context.Context, since time.Time, limit int) ([]seckill.Report, error) {
	recent, err := a.Store.OpenSessions(ctx, since, limit)
	if err != nil {
		return nil, err
	}
	preheated, err := a.Gate.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, s := range recent {
		if slices.Contains(preheated, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return a.reconcile(ctx, ids)
}

func (a *Reconciler) reconcile(ctx context.Context, ids []int64) ([]seckill.Report, error) {
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
