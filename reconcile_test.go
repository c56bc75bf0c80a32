package seckill_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The two sides as fixed values: Reconcile's judgement, without services.
type (
	fakeDB struct {
		snap          seckill.DBSnapshot
		overdueBefore time.Time
	}
	fakeRedis struct{ snap seckill.RedisSnapshot }
)

func (f *fakeDB) SessionSnapshot(_ context.Context, _ int64, orderNos []string, overdueBefore time.Time) (*seckill.DBSnapshot, error) {
	f.overdueBefore = overdueBefore
	s := f.snap
	s.Statuses = map[string]seckill.Status{}
	for _, no := range orderNos {
		if st, ok := f.snap.Statuses[no]; ok {
			s.Statuses[no] = st
		}
	}
	return &s, nil
}

func (f *fakeRedis) SessionSnapshot(context.Context, int64) (*seckill.RedisSnapshot, error) {
	s := f.snap
	return &s, nil
}

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// sale is a session on sale with 10 units: orders a (WAIT_PAY) and b (PAID)
// hold one each, reservation q is QUEUED and c CLOSED with its release to
// run, both fresh. The sale is in motion and everything agrees.
func sale() (*fakeDB, *fakeRedis) {
	db := &fakeDB{snap: seckill.DBSnapshot{
		Session: &seckill.Session{ID: 1, TotalStock: 10, PerUserLimit: 1, StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour)},
		DBStock: 8, HeldQty: 2, MaxUserUnits: 1,
		Orders:   map[seckill.Status]int{seckill.StatusWaitPay: 1, seckill.StatusPaid: 1, seckill.StatusClosed: 1},
		Statuses: map[string]seckill.Status{"1-a": seckill.StatusWaitPay, "1-b": seckill.StatusPaid, "1-c": seckill.StatusClosed},
	}}
	fresh := now.Add(-time.Minute)
	rd := &fakeRedis{snap: seckill.RedisSnapshot{
		Preheated: true, Stock: 6,
		Reservations: map[string]int{"1-a": 1, "1-b": 1, "1-q": 1, "1-c": 1},
		ReservedAt:   map[string]time.Time{"1-a": fresh, "1-b": fresh, "1-q": fresh, "1-c": fresh},
	}}
	return db, rd
}

var policy = seckill.ReconcilePolicy{Now: func() time.Time { return now }}

func reconcile(t *testing.T, db *fakeDB, rd *fakeRedis) *seckill.Report {
	t.Helper()
	r, err := policy.Reconcile(context.Background(), db, rd, 1)
	require.NoError(t, err)
	return r
}

func TestReconcileSaleInMotionIsOK(t *testing.T) {
	db, rd := sale()
	r := reconcile(t, db, rd)
	require.True(t, r.OK, "%v", r.Problems)
	require.Equal(t, 2, r.InFlight, "the QUEUED reservation and the closed one not yet released")
	require.Zero(t, r.StuckOrders)
	require.Equal(t, now.Add(-seckill.DefaultSweepGrace), db.overdueBefore, "WAIT_PAY is overdue past its deadline + the grace")
}

func TestReconcileNotOK(t *testing.T) {
	stale := now.Add(-seckill.DefaultPayTimeout - seckill.DefaultSweepGrace - time.Second)
	for name, c := range map[string]struct {
		change func(*fakeDB, *fakeRedis)
		want   string
		stuck  int
	}{
		"drift": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.Statuses["1-q"] = seckill.StatusFailed
		}, "drift: 1 units", 0},
		"overdue WAIT_PAY": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.Overdue = 1
		}, "1 orders stuck", 1},
		"QUEUED past the pay timeout + grace": {func(db *fakeDB, rd *fakeRedis) {
			rd.snap.ReservedAt["1-q"] = stale
		}, "1 orders stuck", 1},
		"closed, not released past the pay timeout + grace": {func(db *fakeDB, rd *fakeRedis) {
			rd.snap.ReservedAt["1-c"] = stale
		}, "1 orders stuck", 1},
		"on sale, Redis state gone": {func(db *fakeDB, rd *fakeRedis) {
			rd.snap = seckill.RedisSnapshot{}
		}, "no Redis state", 0},
		"starts within the preheat lead, not preheated": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.Session.StartAt = now.Add(3 * time.Minute)
			rd.snap = seckill.RedisSnapshot{}
		}, "no Redis state", 0},
		"Redis stock does not add up": {func(db *fakeDB, rd *fakeRedis) {
			rd.snap.Stock = 7
		}, "redis_stock 7", 0},
		"MySQL stock does not add up": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.DBStock = 9
		}, "db_stock 9", 0},
		"over the per-user limit": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.MaxUserUnits = 2
		}, "over the per-user limit", 0},
		"paid without a payment": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.PaidPaymentMismatch = 1
		}, "PAID orders without", 0},
		"ledger": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.LedgerMismatch = 1
		}, "ledger", 0},
		"a draw sale past the grace, not drawn": {func(db *fakeDB, rd *fakeRedis) {
			db.snap.Session.Mode, db.snap.Session.StartAt = seckill.ModeDraw, now.Add(-2*time.Minute)
		}, "draw sale on sale for 2m0s and not drawn: nobody may buy", 0},
	} {
		t.Run(name, func(t *testing.T) {
			db, rd := sale()
			c.change(db, rd)
			r := reconcile(t, db, rd)
			require.False(t, r.OK)
			require.Len(t, r.Problems, 1, "%v", r.Problems)
			require.Contains(t, r.Problems[0], c.want)
			require.Equal(t, c.stuck, r.StuckOrders)
		})
	}
}

// A session not preheated is fine while it is far from its start, once it
// has ended, or when it has nothing left to sell.
func TestReconcileUnpreheatedSessionOutsideItsSale(t *testing.T) {
	for name, change := range map[string]func(s *seckill.Session, db *fakeDB){
		"starts in an hour": func(s *seckill.Session, _ *fakeDB) { s.StartAt, s.EndAt = now.Add(time.Hour), now.Add(2*time.Hour) },
		"ended":             func(s *seckill.Session, _ *fakeDB) { s.StartAt, s.EndAt = now.Add(-2*time.Hour), now.Add(-time.Hour) },
		"sold out":          func(_ *seckill.Session, db *fakeDB) { db.snap.DBStock, db.snap.HeldQty = 0, 10 },
	} {
		t.Run(name, func(t *testing.T) {
			db := &fakeDB{snap: seckill.DBSnapshot{
				Session: &seckill.Session{ID: 1, TotalStock: 10, PerUserLimit: 1, StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour)},
				DBStock: 10, Orders: map[seckill.Status]int{},
			}}
			change(db.snap.Session, db)
			r := reconcile(t, db, &fakeRedis{})
			require.True(t, r.OK, "%v", r.Problems)
		})
	}
}

// A draw sale within the grace of its start is not late yet; drawn, it
// is never late.
func TestReconcileDrawOnTime(t *testing.T) {
	db, rd := sale()
	db.snap.Session.Mode = seckill.ModeDraw
	db.snap.Session.StartAt = now.Add(-30 * time.Second)
	r := reconcile(t, db, rd)
	require.True(t, r.OK, "%v", r.Problems)
	require.Equal(t, 30.0, r.DrawLateSeconds)

	db.snap.Session.StartAt = now.Add(-time.Hour)
	db.snap.Session.DrawnAt = now.Add(-59 * time.Minute)
	r = reconcile(t, db, rd)
	require.True(t, r.OK, "%v", r.Problems)
	require.Zero(t, r.DrawLateSeconds)
}
