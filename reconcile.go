package seckill

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// DBSnapshot is what MySQL knows about one session.
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
}

// RedisSnapshot is what the Redis gate holds for one session.
type RedisSnapshot struct {
	Preheated    bool
	Stock        int
	Reservations map[string]int // live reservation: order number → units
	// Pending counts reservations whose workflow start is not confirmed;
	// OldestPending is when the oldest of them was reserved.
	Pending       int
	OldestPending time.Time
	// MarkMismatches counts users whose per-user marks (units, slots) differ
	// from what their live reservations hold.
	MarkMismatches int
}

// Snapshotters read the two sides of a session for Reconcile.
type (
	DBSnapshotter interface {
		SessionSnapshot(ctx context.Context, sessionID int64) (*DBSnapshot, error)
		OrderStatuses(ctx context.Context, orderNos []string) (map[string]Status, error)
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
	// RefundsPending counts late or duplicate payments not refunded yet.
	RefundsPending int `json:"refunds_pending"`
	// PendingStarts is the relay's backlog; OldestPendingSeconds its age.
	PendingStarts        int      `json:"pending_starts"`
	OldestPendingSeconds float64  `json:"oldest_pending_seconds"`
	Preheated            bool     `json:"preheated"`
	ReservedQty          int      `json:"reserved_qty"`
	HeldQty              int      `json:"held_qty"`
	MaxUserUnits         int      `json:"max_user_units"`
	PerUserLimit         int      `json:"per_user_limit"`
	Problems             []string `json:"problems"`
}

// Reconcile compares one session's MySQL and Redis state against the
// invariants of the design. Problems lists every broken invariant; OK is
// true when there are none. In-flight reservations are not problems, but a
// quiet session (no sale running) should have none.
func Reconcile(ctx context.Context, db DBSnapshotter, rd RedisSnapshotter, sessionID int64) (*Report, error) {
	// Redis first: an order can move from reservation to row between the two
	// reads, never from row back to reservation.
	rs, err := rd.SessionSnapshot(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	ds, err := db.SessionSnapshot(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	r := &Report{
		SessionID: sessionID, TotalStock: ds.Session.TotalStock, DBStock: ds.DBStock,
		RedisStock: rs.Stock, Orders: ds.Orders, Preheated: rs.Preheated, HeldQty: ds.HeldQty,
		MaxUserUnits: ds.MaxUserUnits, PerUserLimit: ds.Session.PerUserLimit, Problems: []string{},
		PendingStarts: rs.Pending, RefundsPending: ds.RefundsPending,
	}
	if !rs.OldestPending.IsZero() {
		r.OldestPendingSeconds = time.Since(rs.OldestPending).Seconds()
	}
	nos := make([]string, 0, len(rs.Reservations))
	for no, q := range rs.Reservations {
		nos = append(nos, no)
		r.ReservedQty += q
	}
	sort.Strings(nos)
	statuses, err := db.OrderStatuses(ctx, nos)
	if err != nil {
		return nil, err
	}
	for _, no := range nos {
		switch st, ok := statuses[no]; {
		case !ok, st == StatusClosed, st == StatusRefundPending, st == StatusRefunded:
			r.InFlight++
		case st == StatusFailed:
			r.Drift += rs.Reservations[no]
		}
	}
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }
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
	r.OK = len(r.Problems) == 0
	return r, nil
}

// Repairers rebuild a session's Redis state from MySQL.
type (
	HoldingsLister interface {
		LiveHoldings(ctx context.Context, sessionID int64) ([]Reservation, error)
	}
	Rebuilder interface {
		Rebuild(ctx context.Context, sessionID int64, stock int, holdings []Reservation) error
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
	before, err := Reconcile(ctx, db, rd, sessionID)
	if err != nil {
		return nil, nil, err
	}
	rep := &Repair{Changes: []string{}}
	holdings, err := db.LiveHoldings(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	if before.InFlight > 0 || before.PendingStarts > 0 {
		rep.Skipped = fmt.Sprintf("%d reservations in flight and %d starts pending exist only in Redis; repair when the sale is quiet",
			before.InFlight, before.PendingStarts)
		return before, rep, nil
	}
	if !before.Preheated || before.RedisStock != before.DBStock {
		rep.Changes = append(rep.Changes, fmt.Sprintf("redis_stock %d → %d (preheated: %v)", before.RedisStock, before.DBStock, before.Preheated))
	}
	if before.ReservedQty-before.Drift != before.HeldQty || before.Drift > 0 {
		rep.Changes = append(rep.Changes, fmt.Sprintf("reservations: %d units → %d units for %d live orders (drift %d dropped)",
			before.ReservedQty, before.HeldQty, len(holdings), before.Drift))
	}
	if len(rep.Changes) == 0 {
		rep.Skipped = "Redis already agrees with MySQL"
		return before, rep, nil
	}
	if err := rd.Rebuild(ctx, sessionID, before.DBStock, holdings); err != nil {
		return nil, nil, err
	}
	rep.Repaired = true
	after, err := Reconcile(ctx, db, rd, sessionID)
	return after, rep, err
}
