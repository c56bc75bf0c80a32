package seckill

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// DBSnapshot is what MySQL knows about one session, read at one instant
// (one consistent-read transaction).
type DBSnapshot struct {
	Session      *Session
	DBStock      int
	Orders       map[Status]int // order count by status
	HeldQty      int            // Σ quantity of orders whose status holds stock
	MaxUserUnits int            // the most units one user holds in live orders
	// PaidPaymentMismatch counts PAID orders without exactly one captured payment.
	PaidPaymentMismatch int
	// RefundsPending counts payments (late or duplicate) whose refund has
	// not completed yet.
	RefundsPending int
	// LedgerMismatch counts orders whose last ledger row does not end in the
	// order's status or carries no trace id.
	LedgerMismatch int
	// Statuses is the status of each asked-for order that has a row.
	Statuses map[string]Status
	// Overdue counts WAIT_PAY orders whose pay deadline is before the
	// asked-for instant.
	Overdue int
	// Registrants counts the session's registrations (a reserved sale).
	Registrants int
	// ItemStock and ItemHeld are a sale of several items' DBStock and
	// HeldQty by SKU (nil for a single-SKU sale).
	ItemStock, ItemHeld map[int64]int
}

// RedisSnapshot is what the Redis gate holds for one session, read at one
// instant (one script).
type RedisSnapshot struct {
	Preheated    bool
	Stock        int
	Reservations map[string]int // live reservation: order number → units
	// ReservedAt is when each live reservation was made.
	ReservedAt map[string]time.Time
	// Pending counts reservations whose workflow start is not confirmed;
	// OldestPending is when the oldest of them was reserved.
	Pending       int
	OldestPending time.Time
	// MarkMismatches counts users whose per-user marks (units, slots) differ
	// from what their live reservations hold.
	MarkMismatches int
	// Registrants counts the set admission checks in a reserved sale.
	Registrants int
	// Items is a sale of several items' stock by SKU, and ReservedItem
	// the item of each live reservation (empty for a single-SKU sale).
	Items        map[int64]int
	ReservedItem map[string]int64
}

// Snapshotters read the two sides of a session for Reconcile. Each side is
// one consistent read; Reconcile orders the two (see there).
type (
	DBSnapshotter interface {
		// SessionSnapshot reads the session, its stock and orders, the
		// statuses of orderNos and the WAIT_PAY orders overdue before
		// overdueBefore, all in one consistent read.
		SessionSnapshot(ctx context.Context, sessionID int64, orderNos []string, overdueBefore time.Time) (*DBSnapshot, error)
	}
	RedisSnapshotter interface {
		SessionSnapshot(ctx context.Context, sessionID int64) (*RedisSnapshot, error)
	}
)

// Report is the reconcile report of one session (GET
// /admin/v1/sessions/{id}/reconcile, `seckill reconcile`).
type Report struct {
	SessionID  int64          `json:"session_id"`
	OK         bool           `json:"ok"`
	TotalStock int            `json:"total_stock"`
	DBStock    int            `json:"db_stock"`
	RedisStock int            `json:"redis_stock"`
	Orders     map[Status]int `json:"orders"`
	// InFlight counts reservations whose order row does not exist yet
	// (QUEUED) or whose order closed but whose Redis release has not run yet.
	InFlight int `json:"in_flight"`
	// Drift counts units on which Redis and MySQL disagree for good: orders
	// the database refused (FAILED) keep their Redis reservation.
	Drift int `json:"drift"`
	// StuckOrders counts orders that should have settled and did not: WAIT_PAY
	// past their pay deadline + the sweep grace, and reservations older than
	// the pay timeout + the grace still waiting for their row (QUEUED) or
	// for their release. The worker's sweep closes them unless their
	// workflow still runs.
	StuckOrders int `json:"stuck_orders"`
	// RefundsPending counts late or duplicate payments not refunded yet.
	RefundsPending int `json:"refunds_pending"`
	// PendingStarts is the relay's backlog; OldestPendingSeconds its age.
	PendingStarts        int     `json:"pending_starts"`
	OldestPendingSeconds float64 `json:"oldest_pending_seconds"`
	Preheated            bool    `json:"preheated"`
	ReservedQty          int     `json:"reserved_qty"`
	HeldQty              int     `json:"held_qty"`
	MaxUserUnits         int     `json:"max_user_units"`
	PerUserLimit         int     `json:"per_user_limit"`
	// Registrants are a reserved sale's registrations in MySQL and in the
	// set admission checks (absent for a first-come sale).
	Registrants *RegistrantCounts `json:"registrants,omitempty"`
	// DrawLateSeconds is how long a draw sale has been on sale without
	// its draw, during which nobody may buy (absent once drawn).
	DrawLateSeconds float64 `json:"draw_late_seconds,omitempty"`
	// Items are the sale's items, each with its two sides (one, the
	// sale's figures, for a single-SKU sale).
	Items    []ItemReport `json:"items"`
	Problems []string     `json:"problems"`
}

// ItemReport is one item of a sale in a Report.
type ItemReport struct {
	SKUID       int64 `json:"sku_id"`
	TotalStock  int   `json:"total_stock"`
	DBStock     int   `json:"db_stock"`
	RedisStock  int   `json:"redis_stock"`
	HeldQty     int   `json:"held_qty"`
	ReservedQty int   `json:"reserved_qty"`
}

// RegistrantCounts are a reserved sale's registrations on each side.
type RegistrantCounts struct {
	DB    int `json:"db"`
	Redis int `json:"redis"`
}

// Defaults of ReconcilePolicy: SECKILL_SWEEP_GRACE's, and how soon before
// its start a session must be preheated (5 minutes; configurable once
// sessions preheat themselves).
const (
	DefaultSweepGrace  = time.Minute
	DefaultPreheatLead = 5 * time.Minute
)

// ReconcilePolicy holds the durations that decide when an order is stuck
// and when a session must have its Redis state. The zero value uses the
// defaults.
type ReconcilePolicy struct {
	// PayTimeout is the pay timeout the orders were given (SECKILL_PAY_TIMEOUT).
	PayTimeout time.Duration
	// SweepGrace is how long past its deadline an order may take to settle.
	SweepGrace time.Duration
	// PreheatLead is how long before its start a session must be preheated.
	PreheatLead time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (p ReconcilePolicy) withDefaults() ReconcilePolicy {
	if p.PayTimeout <= 0 {
		p.PayTimeout = DefaultPayTimeout
	}
	if p.SweepGrace <= 0 {
		p.SweepGrace = DefaultSweepGrace
	}
	if p.PreheatLead <= 0 {
		p.PreheatLead = DefaultPreheatLead
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// Reconcile reconciles one session with the default policy.
func Reconcile(ctx context.Context, db DBSnapshotter, rd RedisSnapshotter, sessionID int64) (*Report, error) {
	return ReconcilePolicy{}.Reconcile(ctx, db, rd, sessionID)
}

// Reconcile compares one session's MySQL and Redis state against the
// invariants of the design. Problems lists every broken invariant, drift,
// stuck orders and a session on sale without its Redis state; OK is true
// when there are none. In-flight reservations are not problems, but a quiet
// session (no sale running) should have none.
//
// Each side is read at one instant: Redis with one script, MySQL in one
// consistent-read transaction, so every check within one store is exact
// even while the sale moves. Redis is read first: an order moves from
// reservation to row to release (admit → create → close → release), never
// back, so a reservation seen in Redis is found in MySQL with no row yet
// (QUEUED), holding stock, closed with its release still to run (in
// flight), or FAILED (drift, which no later step undoes). Read the other
// way round, a row seen open and closed-and-released before the Redis read
// would look like a lost reservation.
func (p ReconcilePolicy) Reconcile(ctx context.Context, db DBSnapshotter, rd RedisSnapshotter, sessionID int64) (*Report, error) {
	p = p.withDefaults()
	rs, err := rd.SessionSnapshot(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	now := p.Now()
	nos := make([]string, 0, len(rs.Reservations))
	for no := range rs.Reservations {
		nos = append(nos, no)
	}
	sort.Strings(nos)
	ds, err := db.SessionSnapshot(ctx, sessionID, nos, now.Add(-p.SweepGrace))
	if err != nil {
		return nil, err
	}
	r := &Report{
		SessionID: sessionID, TotalStock: ds.Session.TotalStock, DBStock: ds.DBStock,
		RedisStock: rs.Stock, Orders: ds.Orders, Preheated: rs.Preheated, HeldQty: ds.HeldQty,
		MaxUserUnits: ds.MaxUserUnits, PerUserLimit: ds.Session.PerUserLimit, Problems: []string{},
		PendingStarts: rs.Pending, RefundsPending: ds.RefundsPending, StuckOrders: ds.Overdue,
	}
	if !rs.OldestPending.IsZero() {
		r.OldestPendingSeconds = now.Sub(rs.OldestPending).Seconds()
	}
	// A reservation older than this should have become an order that
	// timed out and was released by now.
	staleBefore := now.Add(-p.PayTimeout - p.SweepGrace)
	for _, no := range nos {
		r.ReservedQty += rs.Reservations[no]
		switch st, ok := ds.Statuses[no]; {
		case !ok, st == StatusClosed, st == StatusRefundPending, st == StatusRefunded:
			r.InFlight++
			if rs.ReservedAt[no].Before(staleBefore) {
				r.StuckOrders++
			}
		case st == StatusFailed:
			r.Drift += rs.Reservations[no]
		}
	}
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
	if s := ds.Session; !r.Preheated && r.DBStock > 0 && !now.Before(s.StartAt.Add(-p.PreheatLead)) && now.Before(s.EndAt) {
		problem("session is on sale (or starts within %s) with %d units in MySQL but no Redis state: preheat it (keys lost or never loaded)",
			p.PreheatLead, r.DBStock)
	}
	if r.DBStock < 0 {
		problem("db_stock %d is negative", r.DBStock)
	}
	if r.DBStock+r.HeldQty != r.TotalStock {
		problem("db_stock %d + units held by orders %d != total_stock %d", r.DBStock, r.HeldQty, r.TotalStock)
	}
	if r.Preheated && r.RedisStock+r.ReservedQty != r.TotalStock {
		problem("redis_stock %d + reserved units %d != total_stock %d", r.RedisStock, r.ReservedQty, r.TotalStock)
	}
	if r.Preheated && r.RedisStock < 0 {
		problem("redis_stock %d is negative", r.RedisStock)
	}
	r.Items = itemReports(r, ds, rs, nos)
	if ds.Session.Several() {
		for _, it := range r.Items {
			if it.DBStock+it.HeldQty != it.TotalStock {
				problem("item %d: db_stock %d + units held by orders %d != total_stock %d", it.SKUID, it.DBStock, it.HeldQty, it.TotalStock)
			}
			if r.Preheated && it.RedisStock+it.ReservedQty != it.TotalStock {
				problem("item %d: redis_stock %d + reserved units %d != total_stock %d", it.SKUID, it.RedisStock, it.ReservedQty, it.TotalStock)
			}
		}
	}
	if r.Drift != 0 {
		problem("drift: %d units admitted by Redis were refused by MySQL (FAILED orders); repair Redis when the sale is quiet", r.Drift)
	}
	if r.StuckOrders > 0 {
		problem("%d orders stuck past their pay deadline + %s (WAIT_PAY, or a reservation not created or not released)", r.StuckOrders, p.SweepGrace)
	}
	if r.MaxUserUnits > r.PerUserLimit {
		problem("a user holds %d units, over the per-user limit %d", r.MaxUserUnits, r.PerUserLimit)
	}
	if rs.MarkMismatches > 0 {
		problem("%d per-user marks in Redis differ from the users' live reservations", rs.MarkMismatches)
	}
	if ds.PaidPaymentMismatch > 0 {
		problem("%d PAID orders without exactly one captured payment", ds.PaidPaymentMismatch)
	}
	if ds.LedgerMismatch > 0 {
		problem("%d orders whose ledger does not end in their status with a trace id", ds.LedgerMismatch)
	}
	if ds.Session.AdmitsRegistrants() {
		r.Registrants = &RegistrantCounts{DB: ds.Registrants, Redis: rs.Registrants}
		// A registration is written to Redis first and MySQL is read
		// after Redis here, so the set can only hold more, never fewer,
		// unless Redis lost some.
		if r.Preheated && rs.Registrants < ds.Registrants {
			problem("%d registrants in MySQL but %d in Redis: the missing ones would be refused NOT_ELIGIBLE; a preheat copies them again",
				ds.Registrants, rs.Registrants)
		}
	}
	if s := ds.Session; s.Mode == ModeDraw && !s.Drawn() && !now.Before(s.StartAt) && now.Before(s.EndAt) {
		// A draw takes seconds; one that has not completed within the
		// grace failed, or was retried after a dead worker's heartbeats.
		late := now.Sub(s.StartAt)
		r.DrawLateSeconds = late.Seconds()
		if late > p.SweepGrace {
			problem("draw sale on sale for %s and not drawn: nobody may buy; the session's workflow tries DrawSession again every minute, its last failure is in the Web UI",
				late.Truncate(time.Second))
		}
	}
	r.OK = len(r.Problems) == 0
	return r, nil
}

// itemReports are the report's items: a single-SKU sale's one is the
// sale's figures.
func itemReports(r *Report, ds *DBSnapshot, rs *RedisSnapshot, nos []string) []ItemReport {
	items := ds.Session.AllItems()
	reserved := map[int64]int{}
	for _, no := range nos {
		reserved[rs.ReservedItem[no]] += rs.Reservations[no]
	}
	out := make([]ItemReport, len(items))
	for i, it := range items {
		out[i] = ItemReport{SKUID: it.SKUID, TotalStock: it.TotalStock}
		if !ds.Session.Several() {
			out[i].DBStock, out[i].RedisStock, out[i].HeldQty, out[i].ReservedQty = r.DBStock, r.RedisStock, r.HeldQty, r.ReservedQty
			continue
		}
		out[i].DBStock, out[i].HeldQty, out[i].RedisStock = ds.ItemStock[it.SKUID], ds.ItemHeld[it.SKUID], rs.Items[it.SKUID]
		out[i].ReservedQty = reserved[it.SKUID]
	}
	return out
}

// Repairers rebuild a session's Redis state from MySQL.
type (
	HoldingsLister interface {
		LiveHoldings(ctx context.Context, sessionID int64) ([]Reservation, error)
	}
	// Rebuilder replaces a session's Redis state with the stock (the
	// sale's, and each item's in a sale of several) and holdings decide
	// returns, only if that state did not change while
	// decide ran (a purchase or a release in between would be lost by the
	// rebuild): ECONFLICT then, and nothing changed. decide returning
	// false rebuilds nothing.
	Rebuilder interface {
		RebuildUnchanged(ctx context.Context, sessionID int64,
			decide func(context.Context) (stock int, items map[int64]int, holdings []Reservation, rebuild bool, err error)) (rebuilt bool, err error)
	}
)

// Repair is what a repair did, or why it did nothing.
type Repair struct {
	Repaired bool     `json:"repaired"`
	Changes  []string `json:"changes"`
	// Skipped says why nothing was changed.
	Skipped string `json:"skipped,omitempty"`
}

// RepairRedis corrects a session's Redis state from MySQL when that is
// safe: only when no reservation is in flight (no order still being created
// or released, no start pending), since those exist in Redis alone. Redis
// then holds stock = database stock and one reservation per order that
// holds stock. It returns the report after the repair and what changed.
func RepairRedis(ctx context.Context, db interface {
	DBSnapshotter
	HoldingsLister
}, rd interface {
	RedisSnapshotter
	Rebuilder
}, sessionID int64) (*Report, *Repair, error) {
	var before *Report
	var rep *Repair
	// The check and the rebuild are one step for Redis: a reservation made
	// after the check (nothing pauses admissions) would be dropped by the
	// rebuild, so the rebuild happens only if the session's Redis state is
	// still the one checked.
	_, err := rd.RebuildUnchanged(ctx, sessionID, func(ctx context.Context) (int, map[int64]int, []Reservation, bool, error) {
		var err error
		rep = &Repair{Changes: []string{}}
		if before, err = Reconcile(ctx, db, rd, sessionID); err != nil {
			return 0, nil, nil, false, err
		}
		holdings, err := db.LiveHoldings(ctx, sessionID)
		if err != nil {
			return 0, nil, nil, false, err
		}
		if before.InFlight > 0 || before.PendingStarts > 0 {
			rep.Skipped = fmt.Sprintf("%d reservations in flight and %d starts pending exist only in Redis; repair when the sale is quiet",
				before.InFlight, before.PendingStarts)
			return 0, nil, nil, false, nil
		}
		if !before.Preheated || before.RedisStock != before.DBStock {
			rep.Changes = append(rep.Changes, fmt.Sprintf("redis_stock %d → %d (preheated: %v)", before.RedisStock, before.DBStock, before.Preheated))
		}
		var items map[int64]int
		if len(before.Items) > 1 {
			items = map[int64]int{}
			for _, it := range before.Items {
				items[it.SKUID] = it.DBStock
				if it.RedisStock != it.DBStock {
					rep.Changes = append(rep.Changes, fmt.Sprintf("item %d: redis_stock %d → %d", it.SKUID, it.RedisStock, it.DBStock))
				}
			}
		}
		if before.ReservedQty-before.Drift != before.HeldQty || before.Drift > 0 {
			rep.Changes = append(rep.Changes, fmt.Sprintf("reservations: %d units → %d units for %d live orders (drift %d dropped)",
				before.ReservedQty, before.HeldQty, len(holdings), before.Drift))
		}
		if len(rep.Changes) == 0 {
			rep.Skipped = "Redis already agrees with MySQL"
			return 0, nil, nil, false, nil
		}
		return before.DBStock, items, holdings, true, nil
	})
	switch {
	case ErrorCode(err) == ECONFLICT:
		rep = &Repair{Changes: []string{}, Skipped: "a purchase or a release changed the session's Redis state during the repair; repair when the sale is quiet"}
		return before, rep, nil
	case err != nil:
		return nil, nil, err
	case rep.Skipped != "":
		return before, rep, nil
	}
	rep.Repaired = true
	after, err := Reconcile(ctx, db, rd, sessionID)
	return after, rep, err
}
