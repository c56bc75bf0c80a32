package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A pause in MySQL: no pass grants a right while the sale is paused, and
// the resume extends each right that could still buy at the pause by the
// time paused since the later of the pause and its grant
// (Session.RightEnd) — a right granted before the pause by the whole
// pause, one granted during it from the resume — leaves a used right and
// a waiting position alone, marks the extended rights for Redis and moves
// rights_version once.
func TestResumeExtendsTheOpenRights(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	const ttl = 60 * time.Second
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw", PriceCents: 100, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: int(ttl.Seconds())}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	require.NoError(t, e.DB.RecordDrawEntries(ctx, sess.ID, 0, 1, []int64{1, 2, 3, 4}))
	_, err := e.DB.GrantDrawRights(ctx, sess.ID, 0, 2, now.Add(ttl))
	require.NoError(t, err)
	require.NoError(t, e.DB.MarkDrawn(ctx, sess.ID, now, make([]byte, 32)))
	_, err = e.DB.CreateOrder(ctx, request(sess, "used", 2, 1, 1), time.Now().Add(time.Minute)) // user 2's right bought
	require.NoError(t, err)

	change := func(a seckill.SessionAction) *seckill.Session {
		s, applied, err := e.DB.ChangeSession(ctx, &seckill.SessionChange{SessionID: sess.ID, Action: a,
			Actor: "olga", From: "127.0.0.1", RequestID: string(a)})
		require.NoError(t, err)
		require.True(t, applied)
		return s
	}
	live := func(context.Context) (map[int64]int, error) { return map[int64]int{0: 2}, nil }
	paused := change(seckill.ActionPause)
	require.False(t, paused.PausedAt.IsZero())
	granted, err := e.DB.PassRights(ctx, sess.ID, now.Add(2*ttl), ttl, live)
	require.NoError(t, err)
	require.Empty(t, granted, "no pass while paused, however late")
	// The draw's last right granted during the pause (as a draw made while
	// paused would).
	grantedAt := paused.PausedAt.Add(10 * time.Millisecond)
	_, err = e.DB.GrantDrawRights(ctx, sess.ID, 0, 3, grantedAt.Add(ttl))
	require.NoError(t, err)
	before, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.NoError(t, e.DB.RightsLoaded(ctx, sess.ID, before[:3])) // Redis holds them

	time.Sleep(100 * time.Millisecond) // the resume after the grant
	resumed := change(seckill.ActionResume)
	require.True(t, resumed.PausedAt.IsZero())
	require.Equal(t, paused.RightsVersion+1, resumed.RightsVersion)
	audit, err := e.DB.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	resumedAt := audit[len(audit)-1].At
	after, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, paused.RightEnd(before[0].RightUntil, resumedAt), after[0].RightUntil)
	require.Equal(t, before[0].RightUntil.Add(resumedAt.Sub(paused.PausedAt)), after[0].RightUntil, "the whole pause")
	require.Equal(t, before[1].RightUntil, after[1].RightUntil, "a used right stays as it was")
	require.Equal(t, resumedAt.Add(ttl), after[2].RightUntil, "granted during the pause: its whole ttl from the resume")
	require.True(t, after[3].RightUntil.IsZero(), "waiting")
	toLoad, err := e.DB.RightsToLoad(ctx, sess.ID, resumedAt)
	require.NoError(t, err)
	require.Len(t, toLoad, 2, "the extended rights go to Redis again")
}
