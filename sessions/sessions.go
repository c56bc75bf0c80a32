// Package sessions holds the operator's controls of a sale session, the
// rules between the admin API and the three stores: creating a session
// starts its life (the Temporal workflow that preheats and retires it);
// a change (pause, resume, end, update, add stock) is made in MySQL with
// its audit row first, then in Redis and told to the session's life; a
// preheat loads the database stock into Redis once, or rebuilds Redis from
// MySQL when asked to. Each port is a small interface declared here.
package sessions

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
)

// Store is the MySQL side: the sessions and their audit.
type Store interface {
	CreateSession(ctx context.Context, s *seckill.Session, by *seckill.SessionChange) error
	// ChangeSession applies a change with its audit row; applied is false
	// for a replay of its request id.
	ChangeSession(ctx context.Context, ch *seckill.SessionChange) (*seckill.Session, bool, error)
	// PreheatFigures is the session, its database stock (the sale's, and
	// each item's in a sale of several) and the ids of the stock changes
	// that stock holds, read in one snapshot.
	PreheatFigures(ctx context.Context, id int64) (*seckill.Session, int, map[int64]int, []string, error)
	// LiveHoldings are the orders that hold stock, as reservations.
	LiveHoldings(ctx context.Context, sessionID int64) ([]seckill.Reservation, error)
	seckill.RegistrantPages
	seckill.RightsSource
}

// Stock is the Redis side: the session's live stock.
type Stock interface {
	AddStock(ctx context.Context, sess *seckill.Session, units int, skuID int64, requestID string) (int, error)
	Stock(ctx context.Context, sessionID int64) (int, bool, error)
	PreheatHolding(ctx context.Context, sessionID int64, stock int, items map[int64]int, applied []string) (int, error)
	Rebuild(ctx context.Context, sessionID int64, stock int, items map[int64]int, holdings []seckill.Reservation) error
	seckill.RegistrantSet
	seckill.RightsSink
}

// Lives are the sessions' life workflows.
type Lives interface {
	StartSession(ctx context.Context, sessionID int64) (bool, error)
	SessionChanged(ctx context.Context, sessionID int64) error
}

// Controls are the operator's controls.
type Controls struct {
	Store Store
	Stock Stock
	Lives Lives
	Log   *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Currency is the deployment's (SECKILL_CURRENCY): a session created
	// without its own is priced in it from then on, and so are its orders.
	Currency string
	// Applied, when set, is told the action of each change the store
	// applied (not a replay of its request): the metric the dashboard
	// marks a sale's controls with.
	Applied func(seckill.SessionAction)
}

// Create stores a new session and starts its life, which preheats it
// before the start. Should Temporal not answer, the worker starts the
// life of every open session that has none (within a minute), and a
// manual preheat works regardless: the session is created either way.
// by is the operator's request (who, from where, its trace), the first
// row of the session's audit ledger.
func (c *Controls) Create(ctx context.Context, sess *seckill.Session, by *seckill.SessionChange) error {
	if !sess.EndAt.IsZero() && !sess.EndAt.After(c.now()) {
		return seckill.Errorf(seckill.EOUTOFRANGE, "end_at %s is in the past: a sale must end in the future", sess.EndAt.Format(time.RFC3339))
	}
	if sess.Currency == "" {
		sess.Currency = c.Currency
	} else if err := CheckCurrency(sess.Currency); err != nil {
		return err
	}
	if err := c.Store.CreateSession(ctx, sess, by); err != nil {
		return err
	}
	c.Log.Info("session created", "trace_id", by.TraceID, "session_id", sess.ID, "stock", sess.TotalStock,
		"actor", by.Actor, "role", by.ActorRole)
	if _, err := c.Lives.StartSession(ctx, sess.ID); err != nil {
		c.Log.Warn("session life not started; the worker will", "trace_id", by.TraceID, "session_id", sess.ID, "error", err)
	}
	return nil
}

// Changed is what a change did.
type Changed struct {
	Session *seckill.Session
	// Applied is false for a replay of the change's request id.
	Applied bool
	// RedisStock is the live stock after an add (nil for other changes).
	RedisStock *int
}

// Change applies an operator's change: in MySQL with its audit row (the
// guard: a request id is applied once, and its reuse with another action
// or body is IDEMPOTENCY_MISMATCH), then the units of an add in Redis, or
// a resumed draw's extended rights, then the session's life is told of a
// window that moved.
func (c *Controls) Change(ctx context.Context, ch *seckill.SessionChange) (*Changed, error) {
	sess, applied, err := c.Store.ChangeSession(ctx, ch)
	if err != nil {
		return nil, err
	}
	out := &Changed{Session: sess, Applied: applied}
	if applied && c.Applied != nil {
		c.Applied(ch.Action)
	}
	if ch.Action == seckill.ActionUpdate || ch.Action == seckill.ActionEnd {
		// The session's life moves its preheat and retirement. Not fatal:
		// the change is made; the life reads the session again at its
		// next step anyway.
		if err := c.Lives.SessionChanged(ctx, ch.SessionID); err != nil {
			c.Log.Warn("session life not told of the change", "trace_id", ch.TraceID, "session_id", ch.SessionID, "error", err)
		}
	}
	if ch.Action == seckill.ActionResume && sess.Mode == seckill.ModeDraw {
		// The resume extended the open rights by the pause in MySQL:
		// Redis takes the later ends now, not at the next pass (which
		// loads them anyway should this fail).
		if _, err := seckill.CopyRights(ctx, c.Store, c.Stock, sess, c.now()); err != nil {
			c.Log.Warn("extended rights not loaded; the next pass will", "trace_id", ch.TraceID, "session_id", ch.SessionID, "error", err)
		}
	}
	if ch.Action == seckill.ActionAddStock {
		// Also on a replay: the first attempt may have stopped between
		// MySQL and Redis; the gate adds the units once per request id.
		item := ch.SKUID
		if !sess.Several() {
			item = 0 // Redis keeps a single-SKU sale's stock as the sale's
		}
		left, err := c.Stock.AddStock(ctx, sess, ch.Add, item, ch.RequestID)
		if err != nil {
			return nil, err
		}
		out.RedisStock = &left
	}
	c.Log.Info("session changed", "trace_id", ch.TraceID, "session_id", ch.SessionID, "action", ch.Action,
		"actor", ch.Actor, "request_id", ch.RequestID, "applied", applied, "add", ch.Add)
	return out, nil
}

// Preheated is what a preheat did.
type Preheated struct {
	Stock int `json:"stock"`
	// Rebuilt and Reservations: a forced preheat rebuilt Redis from MySQL
	// with this many reservations.
	Rebuilt      bool `json:"rebuilt,omitempty"`
	Reservations *int `json:"reservations,omitempty"`
}

// Preheat loads a session's database stock into Redis. Without force it
// is idempotent: live stock is never overwritten, and a session that
// already has orders cannot be preheated blind (CONFLICT). With force it
// rebuilds the Redis state from MySQL: stock = database stock, one
// reservation per order that holds stock (for a Redis that lost its
// data). An ended session is never loaded again (CONFLICT): its life
// retired its Redis state, and loading it would put it back where the
// relays look, with nothing left to retire it.
func (c *Controls) Preheat(ctx context.Context, id int64, force bool, traceID string) (*Preheated, error) {
	sess, dbStock, items, applied, err := c.Store.PreheatFigures(ctx, id)
	if err != nil {
		return nil, err
	}
	if !c.now().Before(sess.EndAt) {
		return nil, seckill.Errorf(seckill.ECONFLICT, "session %d ended at %s: there is nothing to preheat", id, sess.EndAt.Format(time.RFC3339))
	}
	// A reserved sale's registrants first, every time (idempotent): a
	// rebuild after Redis lost its data must bring them back too.
	if sess.AdmitsRegistrants() {
		if _, err := seckill.CopyRegistrants(ctx, c.Store, c.Stock, id); err != nil {
			return nil, err
		}
	}
	if force {
		holdings, err := c.Store.LiveHoldings(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := c.Stock.Rebuild(ctx, id, dbStock, items, holdings); err != nil {
			return nil, err
		}
		// A drawn sale's usable rights: the rebuild may have found the
		// rights hash gone with the rest.
		if _, err := seckill.CopyRights(ctx, c.Store, c.Stock, sess, c.now()); err != nil {
			return nil, err
		}
		c.Log.Warn("session stock rebuilt from MySQL", "trace_id", traceID, "session_id", id,
			"stock", dbStock, "holdings", len(holdings))
		n := len(holdings)
		return &Preheated{Stock: dbStock, Rebuilt: true, Reservations: &n}, nil
	}
	if live, preheated, err := c.Stock.Stock(ctx, id); err != nil {
		return nil, err
	} else if preheated {
		return &Preheated{Stock: live}, nil
	}
	if dbStock != sess.TotalStock {
		return nil, seckill.Errorf(seckill.ECONFLICT,
			"session %d already has orders but no Redis stock; rebuild it with ?force=true", id)
	}
	live, err := c.Stock.PreheatHolding(ctx, id, dbStock, items, applied)
	if err != nil {
		return nil, err
	}
	c.Log.Info("session preheated", "trace_id", traceID, "session_id", id, "stock", live)
	return &Preheated{Stock: live}, nil
}

func (c *Controls) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
