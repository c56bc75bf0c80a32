package mysql_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw's registration events in MySQL: a registration.won per right
// granted, at the draw and passed on, written once however often the
// grant is re-run; registration.lost, page by page, for every registrant
// without an order (never drawn, waitlisted, a right lapsed unused), once
// however often the pages are retried; each with the registration as it
// stood, the events' API version, and a registration's events in order.
func TestDrawRegistrationEvents(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	const ttl = 60 * time.Second
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw", PriceCents: 100, TotalStock: 2, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(-time.Second), RightTTLSeconds: int(ttl.Seconds())}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	users := e.RegisterInBulk(sess.ID, 1, 7)
	// Two winners, two waiting.
	require.NoError(t, e.DB.RecordDrawEntries(ctx, sess.ID, 0, 1, []int64{3, 5, 1, 6}))
	// The draw retried: no right granted twice.
	for range 2 {
		_, err := e.DB.GrantDrawRights(ctx, sess.ID, 0, 2, now.Add(ttl))
		require.NoError(t, err)
	}
	require.NoError(t, e.DB.MarkDrawn(ctx, sess.ID, now, make([]byte, 32)))
	_, err := e.DB.CreateOrder(ctx, request(sess, "bought", 3, 1, 1), now.Add(time.Minute)) // user 3's right bought
	require.NoError(t, err)
	// User 5's right lapses: a pass (one unit live) gives it to user 1, once.
	live := func(context.Context) (map[int64]int, error) { return map[int64]int{0: 1}, nil }
	for range 2 {
		_, err := e.DB.PassRights(ctx, sess.ID, now.Add(2*ttl), ttl, live)
		require.NoError(t, err)
	}

	for {
		n, err := e.DB.RecordLostEvents(ctx, sess.ID, 2) // pages of two
		require.NoError(t, err)
		if n == 0 {
			break
		}
		require.LessOrEqual(t, n, 2)
	}
	n, err := e.DB.RecordLostEvents(ctx, sess.ID, 2)
	require.NoError(t, err)
	require.Zero(t, n, "done: nobody twice")

	sequenceAll(t, e)
	type seen struct {
		typ seckill.EventType
		reg seckill.Registration
	}
	byUser := map[int64][]seen{}
	for _, ev := range feed(t, e) {
		if ev.Registration == nil {
			require.Equal(t, seckill.EventOrderCreated, ev.Type)
			continue
		}
		require.Nil(t, ev.Order)
		require.Equal(t, seckill.EventAPIVersion, ev.APIVersion)
		var r seckill.Registration
		require.NoError(t, json.Unmarshal(ev.Registration, &r))
		require.Equal(t, sess.ID, r.SessionID)
		require.Equal(t, seckill.RegistrationEventKey(sess.ID, r.UserID), ev.OrderNo, "ordered per registration")
		require.False(t, r.At.IsZero(), "registered_at")
		byUser[r.UserID] = append(byUser[r.UserID], seen{ev.Type, r})
	}
	types := map[int64][]seckill.EventType{}
	for u, evs := range byUser {
		for _, s := range evs {
			types[u] = append(types[u], s.typ)
			switch s.typ {
			case seckill.EventRegistrationWon:
				require.Equal(t, seckill.RegistrationWon, s.reg.Status)
				require.False(t, s.reg.RightUntil.IsZero(), "right_until")
			case seckill.EventRegistrationLost:
				require.Equal(t, seckill.RegistrationLost, s.reg.Status)
				require.True(t, s.reg.RightUntil.IsZero())
			}
		}
	}
	won, lost := seckill.EventRegistrationWon, seckill.EventRegistrationLost
	require.Equal(t, map[int64][]seckill.EventType{
		3: {won},                        // won, bought
		5: {won, lost},                  // won, lapsed unused
		1: {won, lost},                  // passed on, not bought
		6: {lost},                       // waitlisted to the end
		2: {lost}, 4: {lost}, 7: {lost}, // never drawn
	}, types)
	require.Len(t, users, 7)
	entries, err := e.DB.DrawEntries(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, entries[0].RightUntil.Equal(byUser[3][0].reg.RightUntil), "right_until as granted")
	require.True(t, entries[2].RightUntil.Equal(byUser[1][0].reg.RightUntil), "right_until as passed on")
	require.True(t, byUser[1][0].reg.RightUntil.After(byUser[3][0].reg.RightUntil))
}
