package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/cli"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw sale's life on the real services: the session's workflow draws
// at the start (the entries are the draw recomputed by hand, and `seckill
// draw verify` agrees); shoppers without a right hear NOT_ELIGIBLE and move
// no stock while the winners buy, once each; a right that lapses unused
// passes to the next position exactly once; the registration answers
// follow; and verify fails once an entry is tampered with.
func TestDrawSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	ctx := context.Background()
	const stock, registrants, ttl = 3, 12, 6
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(3 * time.Second)
	sess := &seckill.Session{SKUID: 7, Title: "draw", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: start, EndAt: start.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: start, RightTTLSeconds: ttl}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	require.Empty(t, sess.DrawCommitment, "the API holds no key: the worker commits")
	_, err := e.App.Orders().StartSession(ctx, sess.ID)
	require.NoError(t, err)
	var commitment string
	e.Eventually(10*time.Second, "the session's workflow has the worker commit the seed", func() error {
		s, _, err := e.DB.Session(ctx, sess.ID)
		if err == nil && s.DrawCommitment == "" {
			err = fmt.Errorf("no commitment")
		}
		if err == nil {
			commitment = s.DrawCommitment
		}
		return err
	})
	var users []int64
	for u := int64(1); u <= registrants; u++ {
		users = append(users, u)
		_, err := e.DB.Register(ctx, sess.ID, u, 0)
		require.NoError(t, err)
	}
	_, err = execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10))
	require.ErrorContains(t, err, "not drawn yet")
	early := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registrants", sess.ID), "", nil)
	require.Equal(t, http.StatusConflict, early.Status, "no list before registration closed: %s", early.Raw)

	var drawn *seckill.Session
	e.Eventually(20*time.Second, "the session's workflow draws at the start", func() error {
		s, _, err := e.DB.Session(ctx, sess.ID)
		if err == nil && !s.Drawn() {
			err = fmt.Errorf("not drawn")
		}
		drawn = s
		return err
	})
	require.False(t, drawn.DrawnAt.Before(start.Add(seckill.DrawMargin)), "drawn at the start, the list fixed a margin after register_until")
	seed, err := hex.DecodeString(drawn.DrawSeed)
	require.NoError(t, err)
	require.Equal(t, commitment, drawn.DrawCommitment, "the commitment published before registration")
	require.Equal(t, registrants, *drawn.RegistrantsCount)
	require.Equal(t, hex.EncodeToString(testenv.DigestByHand(users)), drawn.RegistrantsDigest)
	want := testenv.DrawByHand(seed, users)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, 2*stock)
	for i, en := range entries {
		require.Equal(t, want[i], en.UserID, "position %d", i+1)
	}
	winners, waiting := want[:stock], want[stock:2*stock]
	out, err := execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10), "--user", strconv.FormatInt(want[1], 10))
	require.NoError(t, err)
	require.Contains(t, out, "draw verified")
	require.Contains(t, out, fmt.Sprintf("user %d is line %d of the list, drawn at position 2 (WON)\n", want[1], want[1]))
	// The first of the waitlist: where the API's registration shows it.
	out, err = execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10), "--user", strconv.FormatInt(want[stock], 10))
	require.NoError(t, err)
	require.Contains(t, out, fmt.Sprintf("user %d is line %d of the list, drawn at position %d (WAITLISTED, position 1 at the draw)\n", want[stock], want[stock], stock+1))

	// Anyone checks the draw from what it published, without MySQL: the
	// list (its SHA-256 the digest, each shopper's own line in it) and,
	// with the revealed seed, the ranking.
	list := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registrants", sess.ID), "", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
	require.Equal(t, "text/plain; charset=utf-8", list.Header.Get("Content-Type"))
	sum := sha256.Sum256(list.Raw)
	require.Equal(t, drawn.RegistrantsDigest, hex.EncodeToString(sum[:]))
	var listed []int64
	for _, line := range strings.Split(strings.TrimSuffix(string(list.Raw), "\n"), "\n") {
		u, err := strconv.ParseInt(line, 10, 64)
		require.NoError(t, err)
		listed = append(listed, u)
	}
	require.Equal(t, users, listed)
	require.Equal(t, want, testenv.DrawByHand(seed, listed))

	status := func(user int64) *testenv.Response {
		r := e.Do("GET", fmt.Sprintf("/api/v1/sessions/%d/registration", sess.ID), e.Token(user), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		return r
	}
	require.Equal(t, "WON", status(winners[0]).Str("status"))
	require.Equal(t, true, status(winners[0]).Body["in_list"], "the answer says the registration is in the list digested")
	require.NotEmpty(t, status(winners[0]).Str("right_until"))
	w := status(waiting[1])
	require.Equal(t, "WAITLISTED", w.Str("status"))
	require.EqualValues(t, 2, w.Body["position"])
	require.Equal(t, "LOST", status(want[2*stock]).Str("status"))

	// A burst without rights: the waitlist, the losers, and strangers.
	var burst []int64
	burst = append(burst, want[stock:]...)
	for u := int64(100); u < 140; u++ {
		burst = append(burst, u)
	}
	// The two first winners buy in the middle of the burst.
	buyers := append(append(append([]int64{}, burst[:len(burst)/2]...), winners[0], winners[1]), burst[len(burst)/2:]...)
	var wg sync.WaitGroup
	answers := make([]*testenv.Response, len(buyers))
	for i, u := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.BuyWithKey(sess.ID, u, testenv.KeyAt(time.Now()), 1)
		}()
	}
	wg.Wait()
	for i, r := range answers {
		u := buyers[i]
		if u == winners[0] || u == winners[1] {
			require.Equal(t, http.StatusAccepted, r.Status, "winner %d: %s", u, r.Raw)
			e.WaitStatus(e.Token(u), r.Str("order_no"), 15*time.Second, seckill.StatusWaitPay)
			continue
		}
		require.Equal(t, "403 NOT_ELIGIBLE", fmt.Sprintf("%d %s", r.Status, r.Str("code")), "user %d", u)
	}
	left, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, stock-2, left, "the burst moved no stock, the winners a unit each")

	buy := func(user int64) string {
		r := e.BuyWithKey(sess.ID, user, testenv.KeyAt(time.Now()), 1)
		require.Equal(t, http.StatusAccepted, r.Status, "user %d: %s", user, r.Raw)
		no := r.Str("order_no")
		e.WaitStatus(e.Token(user), no, 15*time.Second, seckill.StatusWaitPay)
		return no
	}
	again := e.BuyWithKey(sess.ID, winners[0], testenv.KeyAt(time.Now()), 1)
	testenv.RequireError(t, again, http.StatusForbidden, "NOT_ELIGIBLE", "once each")
	// winners[2] lets its right lapse: its unit passes to waiting[0], once.
	// The pass grants in MySQL, then loads Redis: wait for both.
	var rights map[string]string
	e.Eventually(time.Duration(ttl+10)*time.Second, "the lapsed right passes to the next position", func() error {
		es, err := e.DB.DrawEntries(ctx, sess.ID)
		if err == nil && es[stock].RightUntil.IsZero() {
			err = fmt.Errorf("position %d has no right yet", stock+1)
		}
		entries = es
		if err == nil {
			rights, err = e.Gate.Rights(ctx, sess.ID)
		}
		if _, ok := rights[strconv.FormatInt(waiting[0], 10)]; err == nil && !ok {
			err = fmt.Errorf("position %d's right is not in Redis yet", stock+1)
		}
		return err
	})
	require.Equal(t, strconv.FormatInt(entries[stock].RightUntil.UnixMilli(), 10), rights[strconv.FormatInt(waiting[0], 10)])
	require.Equal(t, "LOST", status(winners[2]).Str("status"), "a right lapsed unused")
	require.Equal(t, "WON", status(waiting[0]).Str("status"))
	buy(waiting[0])
	time.Sleep(3 * time.Second) // a few passes: nothing more to pass on
	entries, err = e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	for _, en := range entries[stock+1:] {
		require.True(t, en.RightUntil.IsZero(), "position %d was granted a right with no unit for it", en.Position)
	}
	rights, err = e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, rights, stock+1, "Redis holds the rights MySQL granted, no more")
	require.Equal(t, "u", rights[strconv.FormatInt(waiting[0], 10)])
	left, _, err = e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, left)
	e.RequireInvariants(sess.ID)

	// Stock added after the draw: verify checks the draw with the stock
	// it drew.
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Exec("UPDATE sessions SET total_stock = total_stock + 5, stock = stock + 5 WHERE id = ?", sess.ID)
	require.NoError(t, err)
	out, err = execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10))
	require.NoError(t, err, "verified with the stock at the draw")
	require.Contains(t, out, fmt.Sprintf("stock at the draw %d", stock))

	// Tampered: verify fails.
	_, err = raw.Exec("UPDATE draw_entries SET user_id = 999999 WHERE session_id = ? AND position = ?", sess.ID, 2*stock)
	require.NoError(t, err)
	_, err = execute(ctx, "draw", "verify", "--session", strconv.FormatInt(sess.ID, 10))
	require.ErrorContains(t, err, fmt.Sprintf("position %d records user 999999", 2*stock))
	require.NotZero(t, cli.ExitCode(err))
}
