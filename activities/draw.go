package activities

import (
	"cmp"
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// DrawStore is the MySQL side of a draw (mysql.DB).
type DrawStore interface {
	DrawSeal(ctx context.Context, sessionID int64) (sealed, plain []byte, err error)
	CommitDraw(ctx context.Context, sessionID int64, sealed []byte, commitment string) (bool, error)
	PublishRegistrants(ctx context.Context, sessionID int64) error
	FixDrawStock(ctx context.Context, sessionID int64) error
	RecordDrawEntries(ctx context.Context, sessionID, skuID int64, first int, users []int64) error
	GrantDrawRights(ctx context.Context, sessionID, skuID int64, n int, until time.Time) ([]seckill.DrawEntry, error)
	MarkDrawn(ctx context.Context, sessionID int64, at time.Time, seed []byte) error
	PassRights(ctx context.Context, sessionID int64, now time.Time, ttl time.Duration,
		liveStock func(context.Context) (map[int64]int, error)) ([]seckill.DrawEntry, error)
	RightsToLoad(ctx context.Context, sessionID int64, now time.Time) ([]seckill.DrawEntry, error)
	RightsLoaded(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error
	RecordLostEvents(ctx context.Context, sessionID int64, limit int) (int, error)
}

// drawBatch is how many entries one INSERT writes.
const drawBatch = 1000

// CommitDraw gives a draw sale its seed, sealed with the worker's key,
// and publishes the seed's commitment, which it returns (registration
// opens with it); a sale that has one keeps it. Nothing for another mode.
// It runs on the draw's task queue, which only workers holding
// SECKILL_DRAW_KEY poll.
func (a *Sessions) CommitDraw(ctx context.Context, id int64) (string, error) {
	s, _, err := a.Store.Session(ctx, id)
	if err != nil || s.Mode != seckill.ModeDraw || s.Drawn() {
		return "", classify(err)
	}
	seed, err := a.drawSeed(ctx, id)
	if err != nil {
		return "", err
	}
	return seckill.DrawCommitment(seed), nil
}

// PublishRegistrants fixes a draw's registrant list once registration
// closed (by the database's clock) and publishes its count and digest,
// once.
func (a *Sessions) PublishRegistrants(ctx context.Context, id int64) error {
	return classify(a.Store.PublishRegistrants(ctx, id))
}

// drawSeed is the draw's seed: the sealed one opened, or a new one (or the
// plain seed of a sale made before sealing existed) sealed and committed
// first. Two workers racing seal one: the loser reads the winner's.
func (a *Sessions) drawSeed(ctx context.Context, id int64) ([]byte, error) {
	if a.DrawKey == nil {
		return nil, temporal.NewNonRetryableApplicationError("this worker has no SECKILL_DRAW_KEY: it cannot seal or open a draw's seed", "NO_DRAW_KEY", nil, id)
	}
	sealed, seed, err := a.Store.DrawSeal(ctx, id)
	if err != nil {
		return nil, classify(err)
	}
	if sealed == nil {
		if seed == nil {
			if seed, err = seckill.NewDrawSeed(); err != nil {
				return nil, err
			}
		}
		if sealed, err = a.DrawKey.Seal(id, seed); err != nil {
			return nil, err
		}
		if won, err := a.Store.CommitDraw(ctx, id, sealed, seckill.DrawCommitment(seed)); err != nil || won {
			return seed, classify(err)
		}
		if sealed, _, err = a.Store.DrawSeal(ctx, id); err != nil {
			return nil, classify(err)
		}
	}
	seed, err = a.DrawKey.Open(id, sealed)
	return seed, classify(err)
}

// DrawSession makes a draw sale's draw, exactly once: nothing when it is
// drawn already. Each item is drawn among its own registrants
// (seckill.DrawPools). Every step is idempotent, so a retry after a
// failure anywhere converges on the same rows: the registrant list is the
// one published when registration closed (published here if it was not;
// a list changed since is refused, not drawn), the stock drawn is
// recorded at the first try, so the order is a pure function of the seed
// and that list, the entries are INSERT IGNOREd, a right is granted once
// (its end, max(start, the draw) + ttl, fixed by the first try that
// grants it), Redis keeps a right it holds, and drawn_at, which publishes
// the seed, is set last.
func (a *Sessions) DrawSession(ctx context.Context, id int64) error {
	s, _, err := a.Store.Session(ctx, id)
	if err != nil || s.Mode != seckill.ModeDraw || s.Drawn() {
		return classify(err)
	}
	seed, err := a.drawSeed(ctx, id)
	if err != nil {
		return err
	}
	if s.RegistrantsDigest == "" {
		if err := a.Store.PublishRegistrants(ctx, id); err != nil {
			return classify(err)
		}
	}
	if err := a.Store.FixDrawStock(ctx, id); err != nil {
		return classify(err)
	}
	// Read again: the list's digest and the stock drawn as recorded.
	if s, _, err = a.Store.Session(ctx, id); err != nil {
		return classify(err)
	}
	pools := s.DrawPools()
	orders, err := seckill.DrawRegistrants(ctx, a.Store, s, seed, pools)
	if err != nil {
		return classify(err)
	}
	size, places := cmp.Or(a.DrawBatch, drawBatch), 0
	for _, p := range pools {
		order := orders[p.SKUID]
		for first := 0; first < len(order); first += size {
			batch := order[first:min(first+size, len(order))]
			if err := a.Store.RecordDrawEntries(ctx, id, p.SKUID, first+1, batch); err != nil {
				return classify(err)
			}
			places += len(batch)
			activity.RecordHeartbeat(ctx, places)
		}
	}
	// The first rights run from the start, or from the draw when it comes
	// later (a draw retried), by Redis's clock: the one admission checks.
	at, err := a.redisNow(ctx, id)
	if err != nil {
		return err
	}
	var rights []seckill.DrawEntry
	for _, p := range pools {
		granted, err := a.Store.GrantDrawRights(ctx, id, p.SKUID, min(p.Stock, len(orders[p.SKUID])), maxTime(s.StartAt, at).Add(s.RightTTL()))
		if err != nil {
			return classify(err)
		}
		rights = append(rights, granted...)
	}
	if err := a.loadRights(ctx, id, rights); err != nil {
		return err
	}
	if err := a.Store.MarkDrawn(ctx, id, at, seed); err != nil {
		return classify(err)
	}
	activity.GetLogger(ctx).Info("session drawn", "session_id", id, "items", len(pools), "places", places, "rights", len(rights))
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
	// Each item's live stock, keyed as its pool (0: a single-SKU sale's).
	live := func(ctx context.Context) (map[int64]int, error) {
		if s.Several() {
			return a.Gate.ItemStocks(ctx, id)
		}
		n, _, err := a.Gate.Stock(ctx, id)
		return map[int64]int{0: n}, err
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

// lostPage is how many registration.lost events one transaction writes.
const lostPage = 1000

// RecordLost writes a drawn sale's registration.lost events once its
// passing is over, one per registrant without an order, when the worker
// is told to (SECKILL_EVENTS_LOST=1); nothing otherwise, or for a sale
// not drawn. A reservation still becoming an order (in flight, or waiting
// for its start) is a buyer, not a loser: it is waited for (a retryable
// failure). Page by page, each page's cursor moved with its events, so a
// retry or a crash resumes where it was and writes none twice.
func (a *Sessions) RecordLost(ctx context.Context, id int64) error {
	if !a.LostEvents {
		return nil
	}
	s, _, err := a.Store.Session(ctx, id)
	if err != nil || s.Mode != seckill.ModeDraw || !s.Drawn() {
		return classify(err)
	}
	r, err := a.Policy.Reconcile(ctx, a.Store, a.Gate, id)
	if err != nil {
		return classify(err)
	}
	if r.InFlight > 0 || r.PendingStarts > 0 {
		return seckill.Errorf(seckill.EUNAVAILABLE, "session %d: %d reservations are still becoming orders", id, r.InFlight+r.PendingStarts)
	}
	total := 0
	for {
		n, err := a.Store.RecordLostEvents(ctx, id, lostPage)
		if err != nil {
			return classify(err)
		}
		if n == 0 {
			activity.GetLogger(ctx).Info("registration.lost events recorded", "session_id", id, "events", total)
			return nil
		}
		total += n
		activity.RecordHeartbeat(ctx, total)
	}
}

// redisNow is Redis's clock: a right lapses by it, in the admission
// script and in the passes alike.
func (a *Sessions) redisNow(ctx context.Context, id int64) (time.Time, error) {
	m, err := a.Gate.StockMark(ctx, id, 0)
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
