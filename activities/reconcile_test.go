package activities_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
)

// The scheduled reconcile and the sale metrics look at the sessions that
// must have Redis state, not only at those Redis still knows: a session on
// sale whose keys are gone (the set of preheated sessions with them) or
// that starts within the preheat lead unpreheated is reported not ok. A
// session far from its start is not looked at yet.
func TestReconcilerReportsDueSessionsWithoutRedisState(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	preheated := e.Session(3, 1, 100)
	now := time.Now().UTC().Truncate(time.Millisecond)
	create := func(start time.Time) *seckill.Session {
		s := &seckill.Session{SKUID: 1, Title: "t", PriceCents: 100, TotalStock: 4, PerUserLimit: 1, StartAt: start, EndAt: start.Add(time.Hour)}
		require.NoError(t, e.DB.CreateSession(ctx, s, nil))
		return s
	}
	lost := create(now.Add(-time.Minute))    // on sale, never preheated (or its keys lost)
	soon := create(now.Add(2 * time.Minute)) // due for preheating
	later := create(now.Add(time.Hour))      // not due yet

	rec := &activities.Reconciler{Store: e.DB, Gate: e.Gate}
	for name, run := range map[string]func() ([]seckill.Report, error){
		"scheduled":    func() ([]seckill.Report, error) { return rec.ReconcileAll(ctx) },
		"sale metrics": func() ([]seckill.Report, error) { return rec.ReconcileRecent(ctx, now.Add(-time.Hour), 100) },
	} {
		reports, err := run()
		require.NoError(t, err, name)
		byID := map[int64]seckill.Report{}
		for _, r := range reports {
			byID[r.SessionID] = r
		}
		require.Len(t, byID, 3, "%s: %+v", name, reports)
		require.True(t, byID[preheated.ID].OK, "%s: %v", name, byID[preheated.ID].Problems)
		for _, s := range []*seckill.Session{lost, soon} {
			require.False(t, byID[s.ID].OK, name)
			require.Contains(t, byID[s.ID].Problems[0], "no Redis state", name)
		}
		require.NotContains(t, byID, later.ID, name)
	}
	e.RequireInvariants(preheated.ID)
}
