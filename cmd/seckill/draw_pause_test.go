package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A pause stops a draw's rights on the real services: nobody can buy, so
// no right lapses and none passes on while the sale is paused, however
// long (here longer than a right's life); the winners are told WON
// throughout; the resume extends every open right by the pause, and a
// winner buys after it with the right drawn before the pause. Then the
// rights run again: the right left unused lapses and passes on, once.
func TestDrawRightsWaitOutAPause(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	const stock, registrants, ttl = 2, 8, 8
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(3 * time.Second)
	sess := &seckill.Session{SKUID: 7, Title: "draw", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: start, EndAt: start.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: start, RightTTLSeconds: ttl}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	for u := int64(1); u <= registrants; u++ {
		_, err := e.DB.Register(ctx, sess.ID, u, 0)
		require.NoError(t, err)
	}
	_, err := e.App.Orders().StartSession(ctx, sess.ID)
	require.NoError(t, err)
	var drawn *seckill.Session
	e.Eventually(20*time.Second, "the session's workflow draws at the start", func() error {
		drawn, _, err = e.DB.Session(ctx, sess.ID)
		if err == nil && !drawn.Drawn() {
			err = fmt.Errorf("not drawn")
		}
		return err
	})
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	buyer, idle := entries[0], entries[1]
	require.False(t, buyer.RightUntil.Before(start.Add(ttl*time.Second)), "the first rights run from the start or the draw")
	require.False(t, buyer.RightUntil.Before(drawn.DrawnAt.Add(ttl*time.Second).Truncate(time.Millisecond)))

	admin := testenv.AdminToken
	path := fmt.Sprintf("/admin/v1/sessions/%d", sess.ID)
	status := func(user int64) *testenv.Response {
		r := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registration", sess.ID), e.Token(user), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		return r
	}
	pausedAt := time.Now() // before the pause: what follows bounds it
	require.Equal(t, http.StatusOK, e.Do("POST", path+"/pause", admin, nil).Status)
	// Past the rights' recorded end, and a few passes more.
	for time.Now().Before(buyer.RightUntil.Add(3 * time.Second)) {
		es, err := e.DB.DrawEntries(ctx, sess.ID)
		require.NoError(t, err)
		for _, en := range es[stock:] {
			require.True(t, en.RightUntil.IsZero(), "position %d was granted a right during the pause", en.Position)
		}
		w := status(buyer.UserID)
		require.Equal(t, "WON", w.Str("status"), "a right does not lapse while nobody can buy: %s", w.Raw)
		time.Sleep(300 * time.Millisecond)
	}
	require.Equal(t, http.StatusOK, e.Do("POST", path+"/resume", admin, nil).Status)
	paused := time.Since(pausedAt)

	// Extended by the pause, exactly as the answer during it showed
	// (Session.RightEnd), from the times the audit ledger recorded.
	audit, err := e.DB.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, audit, 2)
	during := &seckill.Session{RightTTLSeconds: ttl, Paused: true, PausedAt: audit[0].At}
	resumedAt := audit[1].At
	es, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	for _, en := range es[:stock] {
		was := entries[en.Position-1].RightUntil
		require.Equal(t, during.RightEnd(was, resumedAt), en.RightUntil, "position %d", en.Position)
		gained := en.RightUntil.Sub(was)
		require.Greater(t, gained, time.Duration(0), "position %d extended by the pause", en.Position)
		require.LessOrEqual(t, gained, paused, "by no more than the pause")
	}
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(es[0].RightUntil.UnixMilli(), 10), rights[strconv.FormatInt(buyer.UserID, 10)],
		"Redis holds the extended end from the resume")

	r := e.BuyWithKey(sess.ID, buyer.UserID, testenv.KeyAt(time.Now()), 1)
	require.Equal(t, http.StatusAccepted, r.Status, "the right drawn before the pause buys after it: %s", r.Raw)
	e.WaitStatus(e.Token(buyer.UserID), r.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)
	e.Eventually(10*time.Second, "the buyer's answer", func() error {
		if s := status(buyer.UserID).Str("status"); s != "USED" {
			return fmt.Errorf("status %s", s)
		}
		return nil
	})

	// The idle winner's right runs again and lapses: its unit passes on.
	e.Eventually(time.Duration(ttl+10)*time.Second, "the lapsed right passes to the next position", func() error {
		es, err = e.DB.DrawEntries(ctx, sess.ID)
		if err == nil && es[stock].RightUntil.IsZero() {
			err = fmt.Errorf("position %d has no right yet", stock+1)
		}
		return err
	})
	require.Equal(t, "LOST", status(idle.UserID).Str("status"), "a right lapsed unused")
	require.Equal(t, "WON", status(es[stock].UserID).Str("status"))
	for _, en := range es[stock+1:] {
		require.True(t, en.RightUntil.IsZero(), "one unit, one right passed on")
	}
	e.RequireInvariants(sess.ID)
}
