package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/seckill/seckill"
)

// SessionStore is the MySQL side of a session's life.
type SessionStore interface {
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
	PreheatFigures(ctx context.Context, id int64) (*seckill.Session, int, map[int64]int, []string, error)
	seckill.DBSnapshotter
	seckill.RegistrantPages
	DrawStore
}

// SessionGate is the Redis side of a session's life.
type SessionGate interface {
	Stock(ctx context.Context, sessionID int64) (int, bool, error)
	ItemStocks(ctx context.Context, sessionID int64) (map[int64]int, error)
	StockMark(ctx context.Context, sessionID, sku int64) (seckill.StockMark, error)
	PreheatHolding(ctx context.Context, sessionID int64, stock int, items map[int64]int, applied []string) (int, error)
	Retire(ctx context.Context, sessionID int64, retain time.Duration) (bool, error)
	seckill.RedisSnapshotter
	seckill.RegistrantSet
	LoadRights(ctx context.Context, sessionID int64, entries []seckill.DrawEntry) error
}

// Sessions are the activities of SessionWorkflow: load a session, preheat
// it before its start, and let its Redis state go once it is over and
// quiet.
type Sessions struct {
	Store  SessionStore
	Gate   SessionGate
	Policy seckill.ReconcilePolicy
	// DrawBatch is how many draw entries one INSERT writes (drawBatch
	// when zero; a test makes it small to fail a draw between batches).
	DrawBatch int
	// DrawKey seals draw seeds at rest: nil in a process without
	// SECKILL_DRAW_KEY (the API's embedded worker), which never polls
	// the draw's task queue.
	DrawKey *seckill.DrawKey
	// LostEvents: a drawn sale's end records a registration.lost event per
	// registrant who bought nothing (SECKILL_EVENTS_LOST=1; a million
	// events for a million registrants, so off by default).
	LostEvents bool
}

// LoadSession returns the session as MySQL has it now (its window may have
// moved since the workflow started: PATCH, end).
func (a *Sessions) LoadSession(ctx context.Context, id int64) (*seckill.Session, error) {
	s, _, err := a.Store.Session(ctx, id)
	return s, classify(err)
}

// PreheatSession loads the session's MySQL stock into Redis unless Redis
// has it already, and returns the live stock. A session that has orders in
// MySQL but no Redis state lost it (Redis restarted without its data): the
// forced preheat rebuilds it from MySQL, an operator's decision (it drops
// reservations not yet turned into orders), so this fails for good and
// says so; reconcile reports the session too.
//
// The figures come first: reading them marks the session preheated, which
// fixes its mode, so the session they return is the one loaded. A
// reserved sale's registrants are copied next, every time: the copy is
// idempotent, and a preheat retried after loading the stock would not
// reach it again.
func (a *Sessions) PreheatSession(ctx context.Context, id int64) (int, error) {
	s, dbStock, items, applied, err := a.Store.PreheatFigures(ctx, id)
	if err != nil {
		return 0, classify(err)
	}
	if s.AdmitsRegistrants() {
		n, err := seckill.CopyRegistrants(ctx, a.Store, a.Gate, id)
		if err != nil {
			return 0, classify(err)
		}
		activity.GetLogger(ctx).Info("registrants loaded", "session_id", id, "registrants", n)
	}
	if live, preheated, err := a.Gate.Stock(ctx, id); err != nil {
		return 0, err
	} else if preheated {
		return live, nil
	}
	if dbStock != s.TotalStock {
		return 0, temporal.NewNonRetryableApplicationError(
			"session has orders but no Redis state: rebuild it with POST /admin/v1/sessions/{id}/preheat?force=true",
			"REDIS_STATE_LOST", nil, id)
	}
	live, err := a.Gate.PreheatHolding(ctx, id, dbStock, items, applied)
	if err == nil {
		activity.GetLogger(ctx).Info("session preheated", "session_id", id, "stock", live)
	}
	return live, err
}

// RetireSession lets an ended session's Redis state go once nothing of it
// is live: no WAIT_PAY order, no reservation in flight, no start pending.
// Its keys then expire after retain and it leaves the working sets of the
// relays and the scheduled reconcile at once. False (and nothing changed)
// while something is live: the workflow asks again later.
func (a *Sessions) RetireSession(ctx context.Context, id int64, retain time.Duration) (bool, error) {
	r, err := a.Policy.Reconcile(ctx, a.Store, a.Gate, id)
	if err != nil {
		return false, classify(err)
	}
	if r.Orders[seckill.StatusWaitPay] > 0 || r.InFlight > 0 || r.PendingStarts > 0 {
		return false, nil
	}
	if retired, err := a.Gate.Retire(ctx, id, retain); err != nil || !retired {
		// Not retired: a reservation made since the reconcile waits for
		// its start; asked again later.
		return false, err
	}
	activity.GetLogger(ctx).Info("session retired: its Redis keys expire", "session_id", id, "after", retain,
		"paid", r.Orders[seckill.StatusPaid], "closed", r.Orders[seckill.StatusClosed])
	return true, nil
}
