package activities_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

// failingEntries is the MySQL store with RecordDrawEntries failing after
// some batches: a draw that crashes mid-way.
type failingEntries struct {
	*mysql.DB
	okBatches int
}

func (f *failingEntries) RecordDrawEntries(ctx context.Context, id int64, first int, users []int64) error {
	if f.okBatches == 0 {
		return errors.New("injected: the worker died between two batches")
	}
	f.okBatches--
	return f.DB.RecordDrawEntries(ctx, id, first, users)
}

// A draw that fails after some batches of entries, retried, writes the
// same entries as the draw computed by hand; the seed stays secret until
// the draw completes, and a draw made is never made again.
func TestDrawFailingMidwayIsRetriedToTheSameEntries(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw", PriceCents: 100, TotalStock: 10, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: 60}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	require.Len(t, sess.DrawCommitment, 64, "the commitment is published from creation")
	var users []int64
	for u := int64(1); u <= 45; u++ {
		users = append(users, u*13)
		_, err := e.DB.Register(ctx, sess.ID, u*13)
		require.NoError(t, err)
	}
	_, err := e.Gate.Preheat(ctx, sess.ID, sess.TotalStock)
	require.NoError(t, err)

	var ts testsuite.WorkflowTestSuite
	draw := func(store activities.SessionStore) error {
		env := ts.NewTestActivityEnvironment()
		acts := &activities.Sessions{Store: store, Gate: e.Gate, DrawBatch: 4}
		env.RegisterActivity(acts)
		_, err := env.ExecuteActivity(acts.DrawSession, sess.ID)
		return err
	}
	require.ErrorContains(t, draw(&failingEntries{DB: e.DB, okBatches: 2}), "injected")
	half, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, half, 8, "two batches of four written")
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.False(t, s.Drawn())
	require.Empty(t, s.DrawSeed, "the seed is secret until the draw completes")

	require.NoError(t, draw(e.DB))
	s, _, err = e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, s.Drawn())
	seed := mustHex(t, s.DrawSeed)
	sum := sha256.Sum256(seed)
	require.Equal(t, s.DrawCommitment, hexOf(sum[:]))
	want := testenv.DrawByHand(seed, users)[:s.DrawPlaces()]
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, 20)
	for i, en := range entries {
		require.Equal(t, i+1, en.Position)
		require.Equal(t, want[i], en.UserID, "position %d", i+1)
		require.Equal(t, i < 10, !en.RightUntil.IsZero(), "position %d: the first total_stock hold a right", i+1)
		if i < 10 {
			require.True(t, en.RightUntil.Equal(s.StartAt.Add(time.Minute)), "a right lasts from the start: %s", en.RightUntil)
		}
	}
	_, err = seckill.VerifyDraw(s, users, entries)
	require.NoError(t, err)
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, rights, 10)
	for _, en := range entries[:10] {
		require.Equal(t, strconv.FormatInt(en.RightUntil.UnixMilli(), 10), rights[strconv.FormatInt(en.UserID, 10)])
	}

	// Drawn: a third run changes nothing, even with a store that fails.
	require.NoError(t, draw(&failingEntries{DB: e.DB}))

	// Redis lost the rights: the rebuild's copy brings back the usable
	// ones, and none once they lapsed.
	require.NoError(t, e.Redis.Del(ctx, fmt.Sprintf("%s:{s%d}:rights", e.Prefix, sess.ID)).Err())
	n, err := seckill.CopyRights(ctx, e.DB, e.Gate, s, time.Now())
	require.NoError(t, err)
	require.Equal(t, 10, n)
	again, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, rights, again)
	n, err = seckill.CopyRights(ctx, e.DB, e.Gate, s, s.StartAt.Add(2*time.Minute))
	require.NoError(t, err)
	require.Zero(t, n, "lapsed rights are not copied")
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
