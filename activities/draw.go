package activities

import (
	"cmp"
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/seckill/seckill"
)

// DrawStore is the MySQL side of a draw (mysql.DB).
type DrawStore interface {
	DrawSeed(ctx context.Context, sessionID int64) ([]byte, error)
	RecordDrawEntries(ctx context.Context, sessionID int64, first int, users []int64) error
	GrantDrawRights(ctx context.Context, sessionID int64, n int, until time.Time) ([]seckill.DrawEntry, error)
	MarkDrawn(ctx context.Context, sessionID int64, at time.Time) error
	PassRights(ctx context.Context, sessionID int64, now time.Time, ttl time.Duration,
		liveStock func(context.Context) (int, error)) ([]seckill.DrawEntry, error)
	RightsToLoad(ctx context.Context, sessionID int64, now time.Time) ([]seckill.DrawEntry, error)
	RightsLoaded(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error
}

// drawBatch is how many entries one INSERT writes.
const drawBatch = 1000

// DrawSession makes a draw sale's draw, exactly once: nothing when it is
// drawn already. Every step is idempotent, so a retry after a failure
// anywhere converges on the same rows: the order is a pure function of the
// seed and the registrants (registration closed before the start), the
// entries are INSERT IGNOREd, a right is granted once (its end, max(start,
// the draw) + ttl, fixed by the first try that grants it), Redis keeps a
// right it holds, and drawn_at, which publishes the seed, is set last.
func (a *Sessions) DrawSession(ctx context.Context, id int64) error {
	s, _, err := a.Store.Session(ctx, id)
	if err != nil || s.Mode != seckill.ModeDraw || s.Drawn() {
		return classify(err)
	}
	seed, err := a.Store.DrawSeed(ctx, id)
	if err != nil {
		return classify(err)
	}
	order, err := seckill.DrawRegistrants(ctx, a.Store, id, seed, s.DrawPlaces())
	if err != nil {
		return classify(err)
	}
	size := cmp.Or(a.DrawBatch, drawBatch)
	for first := 0; first < len(order); first += size {
		batch := order[first:min(first+size, len(order))]
		if err := a.Store.RecordDrawEntries(ctx, id, first+1, batch); err != nil {
			return classify(err)
		}
		activity.RecordHeartbeat(ctx, first+len(batch))
	}
	// The first rights run from the start, or from the draw when it comes
	// later (a draw retried), by Redis's clock: the one admission checks.
	at, err := a.redisNow(ctx, id)
	if err != nil {
		return err
	}
	rights, err := a.Store.GrantDrawRights(ctx, id, min(s.TotalStock, len(order)), maxTime(s.StartAt, at).Add(s.RightTTL()))
	if err != nil {
		return classify(err)
	}
	if err := a.loadRights(ctx, id, rights); err != nil {
		return err
	}
	if err := a.Store.MarkDrawn(ctx, id, at); err != nil {
		return classify(err)
	}
	activity.GetLogger(ctx).Info("session drawn", "session_id", id, "places", len(order), "rights", len(rights))
	return nil
}

// PassRights hands the units no usable right covers (a right lapsed
// unused, an order closed unpaid) to the next drawn positions waiting, in
// MySQL, then loads into Redis every live right MySQL granted and Redis
// was not seen to take: this pass's, and those of a pass that died
// between the two (or whose Redis write failed), which would otherwise
// leave a winner unable to buy until the right lapsed. It returns how
// many rights it granted.
func (a *Sessions) PassRights(ctx context.Context, id int64) (int, error) {
	s, _, err := a.Store.Session(ctx, id)
	if err != nil || s.Mode != seckill.ModeDraw || !s.Drawn() {
		return 0, classify(err)
	}
	live := func(ctx context.Context) (int, error) {
		n, _, err := a.Gate.Stock(ctx, id)
		return n, err
	}
	now, err := a.redisNow(ctx, id)
	if err != nil {
		return 0, err
	}
	granted, err := a.Store.PassRights(ctx, id, now, s.RightTTL(), live)
	if err != nil {
		return 0, classify(err)
	}
	pending, err := a.Store.RightsToLoad(ctx, id, now)
	if err != nil {
		return 0, classify(err)
	}
	if err := a.loadRights(ctx, id, pending); err != nil {
		return 0, err
	}
	if len(granted) > 0 || len(pending) > len(granted) {
		activity.GetLogger(ctx).Info("rights passed on", "session_id", id, "granted", len(granted),
			"loaded_after_a_failed_pass", len(pending)-len(granted))
	}
	return len(granted), nil
}

// redisNow is Redis's clock: a right lapses by it, in the admission
// script and in the passes alike.
func (a *Sessions) redisNow(ctx context.Context, id int64) (time.Time, error) {
	m, err := a.Gate.StockMark(ctx, id)
	return m.Clock, err
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// loadRights writes rights into the hash admission checks, then records
// in MySQL that Redis holds them. Loading twice is harmless (Redis keeps
// the later end and a used mark), so a failure between the two only
// repeats a write.
func (a *Sessions) loadRights(ctx context.Context, id int64, rights []seckill.DrawEntry) error {
	if err := a.Gate.LoadRights(ctx, id, rights); err != nil {
		return err
	}
	return classify(a.Store.RightsLoaded(ctx, id, rights))
}
