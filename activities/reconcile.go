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
	// Policy says when an order is stuck and when a session must be
	// preheated (the worker's pay timeout and sweep grace).
	Policy seckill.ReconcilePolicy
}

// maxOpenSessions bounds the sessions not yet ended that one reconcile
// looks at besides the preheated ones.
const maxOpenSessions = 200

// ReconcileAll reconciles every preheated session, and every session on
// sale or about to start even if it is not preheated: a session whose Redis
// state is gone must be reported, not skipped.
func (a *Reconciler) ReconcileAll(ctx context.Context) ([]seckill.Report, error) {
	ids, err := a.Gate.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	open, err := a.Store.OpenSessions(ctx, a.now(), maxOpenSessions)
	if err != nil {
		return nil, err
	}
	return a.reconcile(ctx, a.withDue(ids, open))
}

// ReconcileRecent reconciles the sessions that have not ended before since
// (on sale, upcoming, or recently ended), at most limit: the ones whose
// orders still move. Among them, the preheated ones, and those on sale or
// starting within the preheat lead (which must have Redis state); an
// upcoming session not due for preheating has nothing to compare yet.
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
	return a.reconcile(ctx, a.withDue(ids, recent))
}

// withDue adds to ids the sessions of open that are on sale or start
// within the preheat lead.
func (a *Reconciler) withDue(ids []int64, open []*seckill.Session) []int64 {
	now, lead := a.now(), a.Policy.PreheatLead
	if lead <= 0 {
		lead = seckill.DefaultPreheatLead
	}
	for _, s := range open {
		if now.Before(s.EndAt) && !now.Before(s.StartAt.Add(-lead)) && !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

func (a *Reconciler) now() time.Time {
	if a.Policy.Now != nil {
		return a.Policy.Now()
	}
	return time.Now()
}

func (a *Reconciler) reconcile(ctx context.Context, ids []int64) ([]seckill.Report, error) {
	out := make([]seckill.Report, 0, len(ids))
	for _, id := range ids {
		r, err := a.Policy.Reconcile(ctx, a.Store, a.Gate, id)
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
