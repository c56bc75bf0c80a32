package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A worker SIGKILLed in the middle of a draw: part of the entries are
// written and the seed is still secret. Another worker, once Temporal has
// missed the dead one's heartbeats, runs the draw again from the start
// and records the same order: the entries are the draw recomputed by
// hand, `seckill draw verify` agrees, the first winner buys, and the
// invariants hold. Thousands of batches' worth of entries (a big stock)
// keep the draw busy long enough to be killed in its middle.
func TestDrawSurvivesItsWorkerKilledMidway(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	ctx := context.Background()
	const stock, registrants = 20000, 50000
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(3 * time.Second)
	sess := &seckill.Session{SKUID: 7, Title: "draw", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: start, EndAt: start.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: start, RightTTLSeconds: 600}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	users := e.RegisterInBulk(sess.ID, 1, registrants)

	first := e.Spawn(e.ProcessEnv(), "worker")
	_, err = e.App.Orders().StartSession(ctx, sess.ID)
	require.NoError(t, err)
	var written int
	counts := func() (entries int, drawn bool) {
		var at sql.NullTime
		require.NoError(t, raw.QueryRow("SELECT COUNT(*) FROM draw_entries WHERE session_id = ?", sess.ID).Scan(&entries))
		require.NoError(t, raw.QueryRow("SELECT drawn_at FROM sessions WHERE id = ?", sess.ID).Scan(&at))
		return entries, at.Valid
	}
	deadline := time.Now().Add(time.Minute)
	for written == 0 {
		require.True(t, time.Now().Before(deadline), "the draw never began writing entries")
		time.Sleep(5 * time.Millisecond)
		written, _ = counts()
	}
	first.Kill()
	written, drawn := counts()
	require.False(t, drawn, "killed after the draw completed (%d entries): make it longer", written)
	require.Less(t, written, 2*stock, "killed mid-way")
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Empty(t, s.DrawSeed, "the seed stays secret while the draw is unfinished")
	t.Logf("worker killed with %d of %d entries written", written, 2*stock)

	e.Spawn(e.ProcessEnv(), "worker")
	// Temporal notices the dead worker when its heartbeat timeout (a
	// minute) passes, then retries the draw on the live one.
	e.Eventually(3*time.Minute, "the draw completes on the second worker", func() error {
		if n, drawn := counts(); !drawn {
			return fmt.Errorf("not drawn: %d entries", n)
		}
		return nil
	})
	s, _, err = e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	seed, err := hex.DecodeString(s.DrawSeed)
	require.NoError(t, err)
	want := testenv.DrawByHand(seed, users)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, 2*stock)
	for i, en := range entries {
		if want[i] != en.UserID || i+1 != en.Position {
			t.Fatalf("position %d records user %d, the draw by hand gives %d", en.Position, en.UserID, want[i])
		}
	}
	out, err := execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10))
	require.NoError(t, err)
	require.Contains(t, out, "draw verified")

	r := e.BuyWithKey(sess.ID, want[0], testenv.KeyAt(time.Now()), 1)
	require.Equal(t, http.StatusAccepted, r.Status, "the first winner buys: %s", r.Raw)
	e.WaitStatus(e.Token(want[0]), r.Str("order_no"), 30*time.Second, seckill.StatusWaitPay)
	loser := e.BuyWithKey(sess.ID, want[2*stock], testenv.KeyAt(time.Now()), 1)
	testenv.RequireError(t, loser, http.StatusForbidden, "NOT_ELIGIBLE", "drawn right")
	e.RequireInvariants(sess.ID)
}
