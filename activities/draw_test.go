package activities_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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

func (f *failingEntries) RecordDrawEntries(ctx context.Context, id, sku int64, first int, users []int64) error {
	if f.okBatches == 0 {
		return errors.New("injected: the worker died between two batches")
	}
	f.okBatches--
	return f.DB.RecordDrawEntries(ctx, id, sku, first, users)
}

// drawSale creates a draw sale on sale since a second ago (rights of a
// minute) with users registered in its window (closed a second ago),
// preheated.
func drawSale(t *testing.T, e *testenv.Env, stock int, users []int64) *seckill.Session {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw", PriceCents: 100, TotalStock: stock, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: 60}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	e.RegisterUsers(sess.ID, users)
	_, err := e.Gate.Preheat(ctx, sess.ID, stock)
	require.NoError(t, err)
	return sess
}

// drawKey is the key the tests' workers seal seeds with.
func drawKey(t *testing.T) *seckill.DrawKey {
	k, err := seckill.ParseDrawKey(testenv.DrawKey)
	require.NoError(t, err)
	return k
}

// drawer runs a sale's draw in an activity environment over a store,
// writing batch entries an INSERT.
func drawer(t *testing.T, e *testenv.Env, id int64, batch int) func(activities.SessionStore) error {
	var ts testsuite.WorkflowTestSuite
	return func(store activities.SessionStore) error {
		env := ts.NewTestActivityEnvironment()
		acts := &activities.Sessions{Store: store, Gate: e.Gate, DrawBatch: batch, DrawKey: drawKey(t)}
		env.RegisterActivity(acts)
		_, err := env.ExecuteActivity(acts.DrawSession, id)
		return err
	}
}

// sessionRow is a session's draw columns as MySQL holds them.
func sessionRow(t *testing.T, e *testenv.Env, id int64) (seed, sealed []byte) {
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	require.NoError(t, raw.QueryRow("SELECT draw_seed, draw_seed_sealed FROM sessions WHERE id = ?", id).Scan(&seed, &sealed))
	return seed, sealed
}

// A draw that fails after some batches of entries, retried, writes the
// same entries as the draw computed by hand; the seed stays secret until
// the draw completes, and a draw made is never made again.
func TestDrawFailingMidwayIsRetriedToTheSameEntries(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	var users []int64
	for u := int64(1); u <= 45; u++ {
		users = append(users, u*13)
	}
	sess := drawSale(t, e, 10, users)
	require.Empty(t, sess.DrawCommitment, "the API holds no key: the worker commits")
	commitment := e.CommitDraw(sess.ID)
	require.Len(t, commitment, 64)

	draw := drawer(t, e, sess.ID, 4)
	require.ErrorContains(t, draw(&failingEntries{DB: e.DB, okBatches: 2}), "injected")
	half, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, half, 8, "two batches of four written")
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.False(t, s.Drawn())
	require.Empty(t, s.DrawSeed, "the seed is secret until the draw completes")
	require.Equal(t, commitment, s.DrawCommitment)
	plainBefore, sealedBefore := sessionRow(t, e, sess.ID)
	require.Nil(t, plainBefore, "no readable seed in MySQL before the draw")

	require.NoError(t, draw(e.DB))
	s, _, err = e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, s.Drawn())
	seed := mustHex(t, s.DrawSeed)
	sum := sha256.Sum256(seed)
	require.Equal(t, s.DrawCommitment, hexOf(sum[:]))
	require.NotContains(t, string(sealedBefore), string(seed), "what MySQL held before the draw does not show the seed")
	require.Equal(t, len(users), *s.RegistrantsCount)
	require.Equal(t, hexOf(testenv.DigestByHand(users)), s.RegistrantsDigest, "the list published")
	require.Equal(t, 10, s.DrawnStock)
	want := testenv.DrawByHand(seed, users)[:s.DrawPools()[0].Places()]
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, 20)
	for i, en := range entries {
		require.Equal(t, i+1, en.Position)
		require.Equal(t, want[i], en.UserID, "position %d", i+1)
		require.Equal(t, i < 10, !en.RightUntil.IsZero(), "position %d: the first total_stock hold a right", i+1)
		if i < 10 {
			require.True(t, en.RightUntil.Equal(s.DrawnAt.Add(time.Minute)), "a right drawn after the start lasts from the draw: %s", en.RightUntil)
		}
	}
	_, err = seckill.VerifyDraw(s, testenv.OneItem(users), entries)
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

// An order closed unpaid gives its unit back to the sale, and the next
// pass hands it to the next drawn position, once: the right that bought
// is used (its holder has an order), the other winner's right still
// covers its own unit.
func TestClosedOrderPassesItsUnitToTheNextRight(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	sess := drawSale(t, e, 2, []int64{1, 2, 3, 4, 5, 6})
	var ts testsuite.WorkflowTestSuite
	acts := &activities.Sessions{Store: e.DB, Gate: e.Gate, DrawKey: drawKey(t)}
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	_, err := env.ExecuteActivity(acts.DrawSession, sess.ID)
	require.NoError(t, err)
	pass := func() int {
		v, err := env.ExecuteActivity(acts.PassRights, sess.ID)
		require.NoError(t, err)
		var n int
		require.NoError(t, v.Get(&n))
		return n
	}
	require.Zero(t, pass(), "two rights cover the two units")

	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	winner := entries[0].UserID
	closeUnpaid := buyThen(t, e, sess, winner)
	require.Zero(t, pass(), "the right that bought is used, its unit sold")
	closeUnpaid()

	require.Equal(t, 1, pass(), "the unit back on sale goes to the next position")
	require.Zero(t, pass(), "once")
	entries, err = e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.False(t, entries[2].RightUntil.IsZero())
	require.True(t, entries[3].RightUntil.IsZero())
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(entries[2].RightUntil.UnixMilli(), 10), rights[strconv.FormatInt(entries[2].UserID, 10)])
	require.Equal(t, "u", rights[strconv.FormatInt(winner, 10)])
	next, _, err := e.Gate.Admit(ctx, sess, entries[2].UserID, 1, fmt.Sprintf("%d-next", sess.ID), "t", time.Now())
	require.NoError(t, err, "the next position buys the unit")
	next.SKUID = sess.SKUID
	_, err = e.DB.CreateOrder(ctx, &seckill.OrderRequest{Reservation: *next, PriceCents: sess.PriceCents,
		PayTimeout: time.Minute}, time.Now().Add(time.Minute))
	require.NoError(t, err)
	e.RequireInvariants(sess.ID)
}

// buyThen admits user's right and writes the order row, and returns what
// closes that order unpaid and gives its unit back to the sale, as the
// order's workflow does on timeout.
func buyThen(t *testing.T, e *testenv.Env, sess *seckill.Session, user int64) (closeUnpaid func()) {
	ctx := context.Background()
	no := fmt.Sprintf("%d-%d", sess.ID, user)
	resv, _, err := e.Gate.Admit(ctx, sess, user, 1, no, "t", time.Now())
	require.NoError(t, err)
	resv.SKUID = sess.SKUID
	req := &seckill.OrderRequest{Reservation: *resv, PriceCents: sess.PriceCents, PayTimeout: time.Minute}
	_, err = e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	return func() {
		_, _, err := e.DB.CloseOrder(ctx, req, "pay_timeout")
		require.NoError(t, err)
		_, err = e.Gate.Release(ctx, sess.ID, no)
		require.NoError(t, err)
	}
}

// rightsLost is the Redis gate with LoadRights failing: a pass of rights
// whose worker dies after MySQL granted them, before Redis took them.
type rightsLost struct{ activities.SessionGate }

func (rightsLost) LoadRights(context.Context, int64, []seckill.DrawEntry) error {
	return errors.New("injected: the worker died before Redis took the rights")
}

// A pass that grants a right in MySQL and dies before Redis leaves the
// holder unable to buy; the next pass, which grants nothing new, loads
// that right, and its holder buys the unit.
func TestRightGrantedButNotLoadedIsLoadedByTheNextPass(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	sess := drawSale(t, e, 1, []int64{1, 2, 3, 4})
	var ts testsuite.WorkflowTestSuite
	run := func(gate activities.SessionGate, name string) (int, error) {
		env := ts.NewTestActivityEnvironment()
		acts := &activities.Sessions{Store: e.DB, Gate: gate, DrawKey: drawKey(t)}
		env.RegisterActivity(acts)
		v, err := env.ExecuteActivity(name, sess.ID)
		if err != nil {
			return 0, err
		}
		var n int
		_ = v.Get(&n)
		return n, nil
	}
	_, err := run(e.Gate, "DrawSession")
	require.NoError(t, err)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	buyThen(t, e, sess, entries[0].UserID)()

	_, err = run(rightsLost{e.Gate}, "PassRights")
	require.ErrorContains(t, err, "injected")
	entries, err = e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.False(t, entries[1].RightUntil.IsZero(), "MySQL granted the next position its right")
	next := entries[1].UserID
	_, _, err = e.Gate.Admit(ctx, sess, next, 1, fmt.Sprintf("%d-early", sess.ID), "t", time.Now())
	require.Equal(t, seckill.ENOTELIGIBLE, seckill.ErrorCode(err), "Redis does not hold the right yet: %v", err)

	granted, err := run(e.Gate, "PassRights")
	require.NoError(t, err)
	require.Zero(t, granted, "nothing new to grant: the unit is covered by the right granted before")
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(entries[1].RightUntil.UnixMilli(), 10), rights[strconv.FormatInt(next, 10)])
	buyThen(t, e, sess, next)
	again, err := run(e.Gate, "PassRights")
	require.NoError(t, err)
	require.Zero(t, again, "the unit sold again")
	e.RequireInvariants(sess.ID)
}

// A draw that failed half-way is retried over the list published when
// registration closed, whatever was written since: registrations stamped
// after register_until (by the database's clock) are not in it, and a
// row slipped in under the cutoff is refused (the list is not the one
// published) rather than drawn over the positions written, so the
// positions never have a gap and verify holds.
func TestRetriedDrawOverAChangedListLeavesNoGap(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	var users []int64
	for u := int64(1); u <= 30; u++ {
		users = append(users, u)
	}
	sess := drawSale(t, e, 5, users)
	draw := drawer(t, e, sess.ID, 2)
	require.ErrorContains(t, draw(&failingEntries{DB: e.DB, okBatches: 2}), "injected")
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	// Late: forty registrations written after the window closed, enough
	// that some would rank among the first places of a draw counting them.
	for u := int64(1000); u < 1040; u++ {
		_, err := raw.Exec("INSERT INTO registrations (session_id, user_id, created_at) VALUES (?, ?, UTC_TIMESTAMP(6))", sess.ID, u)
		require.NoError(t, err)
	}
	// Backdated under the cutoff: not the list published.
	_, err = raw.Exec("INSERT INTO registrations (session_id, user_id, created_at) SELECT id, 5000, register_from FROM sessions WHERE id = ?", sess.ID)
	require.NoError(t, err)
	require.ErrorContains(t, draw(e.DB), "not the list published")
	_, err = raw.Exec("DELETE FROM registrations WHERE session_id = ? AND user_id = 5000", sess.ID)
	require.NoError(t, err)

	require.NoError(t, draw(e.DB))
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, entries, 10)
	for i, en := range entries {
		require.Equal(t, i+1, en.Position, "no gap")
	}
	registrants, err := e.DB.Registrants(ctx, sess.ID, 0, 100)
	require.NoError(t, err)
	require.Equal(t, testenv.OneItem(users), registrants, "the list is the registrations before the cutoff")
	_, err = seckill.VerifyDraw(s, registrants, entries)
	require.NoError(t, err)
}

// A draw created before seeds were sealed holds its seed readable in
// MySQL, its commitment published from it (00018_draw_sealed.sql): the
// worker seals that seed, keeping the commitment, erases the readable
// copy, and the draw publishes the same seed.
func TestReadableSeedOfAnOlderSaleIsSealed(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	sess := drawSale(t, e, 1, []int64{1, 2, 3})
	seed := []byte("an older sale's seed, 32 bytes..")
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	_, err = raw.Exec("UPDATE sessions SET draw_seed = ?, draw_commitment = SHA2(?, 256) WHERE id = ?", seed, seed, sess.ID)
	require.NoError(t, err)
	sum := sha256.Sum256(seed)
	require.Equal(t, hexOf(sum[:]), e.CommitDraw(sess.ID), "the commitment published stays")
	plain, sealed := sessionRow(t, e, sess.ID)
	require.Nil(t, plain, "the readable copy is gone")
	require.NotEmpty(t, sealed)
	require.NoError(t, drawer(t, e, sess.ID, 0)(e.DB))
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, hexOf(seed), s.DrawSeed)
}

// A draw sale of sizes draws each size's stock among that size's
// registrants: each size's positions are its registrants in the sale's
// one ranking (checked against the definition and by VerifyDraw, which
// refuses an entry moved to another size), a right buys its own size
// only, and a unit given back to a size passes to that size's waitlist,
// not another's.
func TestDrawBySize(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{Title: "sneaker", PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: 60}
	sess.SetItems([]seckill.Item{{SKUID: 38, Title: "EU 38", PriceCents: 700, TotalStock: 2},
		{SKUID: 39, Title: "EU 39", PriceCents: 800, TotalStock: 1}, {SKUID: 40, Title: "EU 40", PriceCents: 900, TotalStock: 1}})
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	sizes := map[int64]int64{}
	var regs []seckill.Registrant
	for u := int64(1); u <= 30; u++ {
		sizes[u] = 38 + u%3
		regs = append(regs, seckill.Registrant{UserID: u, SKUID: sizes[u]})
	}
	e.RegisterFor(sess.ID, regs)
	_, err := e.Gate.PreheatHolding(ctx, sess.ID, 4, map[int64]int{38: 2, 39: 1, 40: 1}, nil)
	require.NoError(t, err)

	var ts testsuite.WorkflowTestSuite
	acts := &activities.Sessions{Store: e.DB, Gate: e.Gate, DrawKey: drawKey(t)}
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	_, err = env.ExecuteActivity(acts.DrawSession, sess.ID)
	require.NoError(t, err)

	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, hexOf(testenv.DigestSizesByHand(sizes)), s.RegistrantsDigest, "the list names each registrant's size")
	for _, it := range s.Items {
		require.Equal(t, it.TotalStock, it.DrawnStock, "item %d: its stock at the draw is recorded", it.SKUID)
	}
	want := testenv.DrawSizesByHand(mustHex(t, s.DrawSeed), sizes)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	bySize := map[int64][]seckill.DrawEntry{}
	for _, en := range entries {
		bySize[en.SKUID] = append(bySize[en.SKUID], en)
	}
	rights, err := e.Gate.Rights(ctx, sess.ID)
	require.NoError(t, err)
	for _, it := range s.Items {
		got := bySize[it.SKUID]
		require.Len(t, got, 2*it.TotalStock, "item %d: its winners and a waitlist as long", it.SKUID)
		for i, en := range got {
			require.Equal(t, i+1, en.Position, "item %d", it.SKUID)
			require.Equal(t, want[it.SKUID][i], en.UserID, "item %d position %d", it.SKUID, i+1)
			field := fmt.Sprintf("%d:%d", en.UserID, it.SKUID)
			require.Equal(t, i < it.TotalStock, !en.RightUntil.IsZero(), "item %d position %d: a right for each unit", it.SKUID, i+1)
			require.Equal(t, i < it.TotalStock, rights[field] != "", "item %d position %d: Redis holds the right for its size", it.SKUID, i+1)
		}
	}
	registrants, err := e.DB.Registrants(ctx, sess.ID, 0, 100)
	require.NoError(t, err)
	n, err := seckill.VerifyDraw(s, registrants, entries)
	require.NoError(t, err)
	require.Equal(t, 8, n)
	moved := slices.Clone(entries)
	moved[0].SKUID, moved[len(moved)-1].SKUID = moved[len(moved)-1].SKUID, moved[0].SKUID
	_, err = seckill.VerifyDraw(s, registrants, moved)
	require.Error(t, err, "an entry moved to another size is not the draw")

	// A right buys its own size only.
	w39 := bySize[39][0].UserID
	_, err = admitItem(e, s, w39, 38, "other-size")
	require.Equal(t, seckill.ENOTELIGIBLE, seckill.ErrorCode(err), "a right for EU 39 does not buy EU 38: %v", err)
	closeUnpaid := buyItem(t, e, s, w39, 39)
	pass := func() []seckill.DrawEntry {
		_, err := env.ExecuteActivity(acts.PassRights, s.ID)
		require.NoError(t, err)
		got, err := e.DB.DrawEntries(ctx, s.ID)
		require.NoError(t, err)
		var granted []seckill.DrawEntry
		for _, en := range got {
			if !en.RightUntil.IsZero() {
				granted = append(granted, en)
			}
		}
		return granted
	}
	require.Len(t, pass(), 4, "the right that bought is used, its unit sold: nothing passes")
	closeUnpaid()
	granted := pass()
	require.Len(t, granted, 5, "the unit back on EU 39 passes on")
	require.True(t, slices.ContainsFunc(granted, func(en seckill.DrawEntry) bool { return en.SKUID == 39 && en.Position == 2 }),
		"to EU 39's next in line, not another size's: %+v", granted)
	buyItem(t, e, s, bySize[39][1].UserID, 39)
	e.RequireInvariants(s.ID)
}

// admitItem runs the admission of one unit of item sku for user.
func admitItem(e *testenv.Env, s *seckill.Session, user, sku int64, no string) (*seckill.Admission, error) {
	return e.Gate.AdmitAttempt(context.Background(), &seckill.Attempt{Session: s, UserID: user, Quantity: 1, SKUID: sku,
		OrderNo: fmt.Sprintf("%d-%s", s.ID, no), TraceID: "t", Now: time.Now(), Fingerprint: "1"})
}

// buyItem admits user's right for item sku and writes the order row; it
// returns what closes that order unpaid and gives its unit back, as the
// order's workflow does on timeout.
func buyItem(t *testing.T, e *testenv.Env, s *seckill.Session, user, sku int64) (closeUnpaid func()) {
	ctx := context.Background()
	no := fmt.Sprintf("%d-%d", user, sku)
	adm, err := admitItem(e, s, user, sku, no)
	require.NoError(t, err)
	it, err := s.Item(sku)
	require.NoError(t, err)
	req := &seckill.OrderRequest{Reservation: *adm.Reservation, PriceCents: it.PriceCents, Title: it.Title, PayTimeout: time.Minute}
	_, err = e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	return func() {
		_, _, err := e.DB.CloseOrder(ctx, req, "pay_timeout")
		require.NoError(t, err)
		_, err = e.Gate.Release(ctx, s.ID, adm.OrderNo)
		require.NoError(t, err)
	}
}
