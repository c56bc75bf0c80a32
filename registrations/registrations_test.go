package registrations_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/registrations"
)

// drawnStore is a drawn sale's truth as fixed values, counting the loads
// of the positions, and its rights hash in Redis (rights: user → field).
type drawnStore struct {
	registered map[int64]bool
	ordered    map[int64]bool
	rights     map[int64]string
	mu         sync.Mutex
	entries    []seckill.DrawEntry
	loads      atomic.Int32
	listReads  atomic.Int32 // pages of registrants read
}

func (s *drawnStore) Register(context.Context, int64, int64, int64) (bool, error) { return false, nil }

func (s *drawnStore) Registration(_ context.Context, sessionID, userID int64) (*seckill.Registration, error) {
	if !s.registered[userID] {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "user %d is not registered", userID)
	}
	return &seckill.Registration{SessionID: sessionID, UserID: userID, Status: seckill.RegistrationRegistered}, nil
}

func (s *drawnStore) DrawEntries(context.Context, int64) ([]seckill.DrawEntry, error) {
	s.loads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seckill.DrawEntry(nil), s.entries...), nil
}

func (s *drawnStore) Registrants(_ context.Context, _, after int64, limit int) ([]seckill.Registrant, error) {
	s.listReads.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []seckill.Registrant
	for u := range s.registered {
		if u > after {
			ids = append(ids, seckill.Registrant{UserID: u})
		}
	}
	slices.SortFunc(ids, func(a, b seckill.Registrant) int { return cmp.Compare(a.UserID, b.UserID) })
	return ids[:min(limit, len(ids))], nil
}

func (s *drawnStore) HasOrder(_ context.Context, _, userID int64) (bool, error) {
	return s.ordered[userID], nil
}

// drawnSet is the Redis side: the rights hash as the store holds it.
type drawnSet struct{ *drawnStore }

func (s drawnSet) Register(context.Context, int64, int64, int64) error { return nil }

func (s drawnSet) Right(_ context.Context, _, userID, _ int64) (string, error) {
	return s.rights[userID], nil
}

// Results come from a copy of the positions loaded once per version of
// the sale's rights however many shoppers ask at once and however long:
// a live right is WON, a right that bought USED (Redis marked it used,
// or Redis lost it and the holder has an order), a lapsed one LOST, a
// waiting position WAITLISTED with its place among those still waiting,
// a registrant without a position LOST, a stranger NOT_FOUND; a right
// passed on shows once the session's rights_version moves.
func TestDrawResultsFromTheCopyOfThePositions(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := now
	st := &drawnStore{
		registered: map[int64]bool{10: true, 20: true, 30: true, 40: true, 50: true, 60: true, 80: true},
		ordered:    map[int64]bool{},
		rights:     map[int64]string{10: "1", 20: "1"},
		entries: []seckill.DrawEntry{
			{Position: 1, UserID: 10, RightUntil: now.Add(time.Minute)},
			{Position: 2, UserID: 20, RightUntil: now.Add(-time.Second)},
			{Position: 3, UserID: 30},
			{Position: 4, UserID: 40},
			{Position: 5, UserID: 80, RightUntil: now.Add(time.Minute)},
		},
	}
	desk := &registrations.Desk{Store: st, Set: drawnSet{st}, Now: func() time.Time { return clock }}
	sess := &seckill.Session{ID: 1, Mode: seckill.ModeDraw, DrawnAt: now.Add(-time.Minute), RightTTLSeconds: 60}
	status := func(user int64) (seckill.RegistrationStatus, int) {
		r, err := desk.Status(context.Background(), sess, user)
		require.NoError(t, err)
		return r.Status, r.Position
	}

	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() { status(50) })
	}
	wg.Wait()
	require.EqualValues(t, 1, st.loads.Load(), "concurrent askers share one load")

	s, _ := status(10)
	require.Equal(t, seckill.RegistrationWon, s)
	st.rights[10] = "u"
	s, _ = status(10)
	require.Equal(t, seckill.RegistrationUsed, s, "a live right that bought can buy no more")
	s, _ = status(20)
	require.Equal(t, seckill.RegistrationLost, s, "a right that lapsed unused")
	st.rights[20] = "u"
	s, _ = status(20)
	require.Equal(t, seckill.RegistrationUsed, s, "a lapsed right that bought")
	s, _ = status(80)
	require.Equal(t, seckill.RegistrationWon, s, "a right Redis does not hold yet, no order")
	st.ordered[80] = true
	s, _ = status(80)
	require.Equal(t, seckill.RegistrationUsed, s, "Redis lost the used mark: the order tells")
	s, p := status(30)
	require.Equal(t, seckill.RegistrationWaitlisted, s)
	require.Equal(t, 1, p)
	s, p = status(40)
	require.Equal(t, seckill.RegistrationWaitlisted, s)
	require.Equal(t, 2, p)
	s, _ = status(50)
	require.Equal(t, seckill.RegistrationLost, s, "registered, not drawn")
	_, err := desk.Status(context.Background(), sess, 70)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	clock = clock.Add(30 * time.Second)
	s, _ = status(50)
	require.Equal(t, seckill.RegistrationLost, s)
	require.EqualValues(t, 1, st.loads.Load(), "the rights did not move: no reread, however long")

	// A pass grants position 3 a right: seen once the session's version
	// moves.
	st.mu.Lock()
	st.entries[2].RightUntil = clock.Add(time.Minute)
	st.mu.Unlock()
	s, _ = status(30)
	require.Equal(t, seckill.RegistrationWaitlisted, s, "the session has not moved yet")
	sess.RightsVersion++
	s, _ = status(30)
	require.Equal(t, seckill.RegistrationWon, s)
	s, p = status(40)
	require.Equal(t, seckill.RegistrationWaitlisted, s)
	require.Equal(t, 1, p, "first in line now")
	require.EqualValues(t, 2, st.loads.Load())

	// Before the draw a registrant is REGISTERED, and no position is read.
	early := &seckill.Session{ID: 2, Mode: seckill.ModeDraw}
	r, err := desk.Status(context.Background(), early, 10)
	require.NoError(t, err)
	require.Equal(t, seckill.RegistrationRegistered, r.Status)
	require.EqualValues(t, 2, st.loads.Load())
}

// A draw's published registrant list is the text its digest covers, read
// from the truth once however many ask at once; none before it is
// published; a list that changed under the cutoff since is refused, never
// served as the published one.
func TestPublishedRegistrantList(t *testing.T) {
	st := &drawnStore{registered: map[int64]bool{30: true, 4: true, 1000: true}}
	desk := &registrations.Desk{Store: st}
	ctx := context.Background()
	_, err := desk.List(ctx, &seckill.Session{ID: 1, Mode: seckill.ModeDraw})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "not published yet")

	text := []byte("4\n30\n1000\n")
	sum := sha256.Sum256(text)
	n := 3
	sess := &seckill.Session{ID: 1, Mode: seckill.ModeDraw, RegistrantsCount: &n, RegistrantsDigest: hex.EncodeToString(sum[:])}
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			list, err := desk.List(ctx, sess)
			require.NoError(t, err)
			require.Equal(t, text, list)
		}()
	}
	wg.Wait()
	require.EqualValues(t, 2, st.listReads.Load(), "one read of the truth (a page and the empty page after it)")

	st.mu.Lock()
	st.registered[5] = true
	st.mu.Unlock()
	changed := *sess // another sale with the same published list, whose rows changed since
	changed.ID = 2
	_, err = desk.List(ctx, &changed)
	require.NoError(t, err, "kept: a published list is read once")
	changed.RegistrantsDigest = hex.EncodeToString(make([]byte, sha256.Size))
	_, err = desk.List(ctx, &changed)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "a list read now that is not the published one")
}
