package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill/seckill"
)

// The events out (seckill.Event, docs/events.md): recorded with the
// change they tell of, sequenced into the feed, delivered by the relay.
// A registration's events (registrationevents.go) share the table.

// orderChange is one status change of an order, as recordChange writes it: its
// ledger row and the order as the change left it.
type orderChange struct {
	ledger *ledgerRow
	order  *seckill.Order
}

// recordChange writes the ledger rows of changes and, for each change to a
// status that emits an event (seckill.EventFor), its event with the
// order's snapshot, in tx: every status change goes through here, so an
// event exists exactly when its change committed. Batches insert in one
// statement each.
func recordChange(tx *gorm.DB, changes ...orderChange) error {
	if len(changes) == 0 {
		return nil
	}
	ledgers := make([]*ledgerRow, len(changes))
	var events []*eventRow
	for i, c := range changes {
		ledgers[i] = c.ledger
		typ, ok := seckill.EventFor(seckill.Status(c.ledger.ToStatus))
		if !ok {
			continue
		}
		snapshot, err := json.Marshal(c.order)
		if err != nil {
			return err
		}
		events = append(events, &eventRow{Type: string(typ), OrderNo: c.ledger.OrderNo, TraceID: c.order.TraceID,
			OrderJSON: string(snapshot), APIVersion: seckill.EventAPIVersion, CreatedAt: c.ledger.CreatedAt})
	}
	if err := tx.Create(ledgers).Error; err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	return tx.Create(events).Error
}

// eventRow is one event. OrderNo is what its delivery is ordered by (the
// order's number, or seckill.RegistrationEventKey), OrderJSON the order's
// or the registration's JSON.
type eventRow struct {
	ID         int64 `gorm:"primaryKey"`
	Seq        *int64
	Type       string
	OrderNo    string
	OrderJSON  string `gorm:"column:order_json"`
	APIVersion string `gorm:"column:api_version"`
	// TraceID is the order's (the purchase's trace), for its delivery's
	// span to link to.
	TraceID   string
	CreatedAt time.Time
	// DeliveredAt is when the push was done with the event: delivered,
	// or let go without an endpoint (Unsent, see LetUnsentEventsGo).
	DeliveredAt *time.Time
	Unsent      bool
	Attempts    int
	// NextAt is when a sequenced event waiting for delivery is due (its
	// recording, a backoff, a lease); nil before it is sequenced and once
	// delivered or parked.
	NextAt    *time.Time
	LastError string
	ParkedAt  *time.Time
}

func (eventRow) TableName() string { return "order_events" }

// eventIDPrefix + the row id is an event's id: stable, unique, and known
// before the event is sequenced.
const eventIDPrefix = "evt_"

func (r *eventRow) domain() seckill.Event {
	e := seckill.Event{ID: eventIDPrefix + strconv.FormatInt(r.ID, 10), Type: seckill.EventType(r.Type),
		APIVersion: r.APIVersion, At: r.CreatedAt.UTC(), OrderNo: r.OrderNo, TraceID: r.TraceID}
	if strings.HasPrefix(r.Type, registrationEventPrefix) {
		e.Registration = json.RawMessage(r.OrderJSON)
	} else {
		e.Order = json.RawMessage(r.OrderJSON)
	}
	return e
}

func (r *eventRow) state() *seckill.EventState {
	st := &seckill.EventState{Event: r.domain(), State: seckill.EventPending, Attempts: r.Attempts, LastError: r.LastError}
	switch {
	case r.ParkedAt != nil:
		st.State, st.ParkedAt = seckill.EventParked, r.ParkedAt.UTC()
	case r.NextAt != nil:
		st.NextAttemptAt = r.NextAt.UTC()
	}
	return st
}

// eventRowID parses an event id; NOT_FOUND for one this store never made.
func eventRowID(eventID string) (int64, error) {
	if s, ok := strings.CutPrefix(eventID, eventIDPrefix); ok {
		if id, err := strconv.ParseInt(s, 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	return 0, seckill.Errorf(seckill.ENOTFOUND, "event %q not found", eventID)
}

// SequenceEvents gives up to limit visible unsequenced events the next seq
// values, in id order, makes them due for delivery from their recording
// (next_at, see dueEventsSQL), and returns how many it sequenced. Due from
// here rather than from the insert, so that an event recorded by any
// writer (a binary of before next_at, in a rolling deploy) is delivered.
// Passes are serialized by the lock on the cursor row, so seq values are
// handed out one pass after another and each pass's rows are visible, with
// their seq, before the next pass starts: a reader paging by seq never
// skips one. An event whose transaction commits after a larger id was
// sequenced just gets a later seq. Within one order the changes are
// serialized by the order row's lock, so its events are sequenced in the
// order of its changes. Read committed: the pass sees what committed up to
// each statement, and takes no gap locks that would hold up the order
// transactions inserting events meanwhile.
func (db *DB) SequenceEvents(ctx context.Context, limit int) (int, error) {
	n := 0
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cursor struct{ Seq int64 }
		if err := tx.Raw("SELECT seq FROM order_event_cursor WHERE id = 1 FOR UPDATE").Scan(&cursor).Error; err != nil {
			return err
		}
		var ids []int64
		if err := tx.Model(&eventRow{}).Where("seq IS NULL").Order("id").Limit(limit).Pluck("id", &ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		var b strings.Builder
		args := make([]any, 0, 2*len(ids)+1)
		b.WriteString("UPDATE order_events SET next_at = COALESCE(next_at, created_at), seq = CASE id")
		for i, id := range ids {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, id, cursor.Seq+int64(i)+1)
		}
		b.WriteString(" END WHERE id IN ?")
		args = append(args, ids)
		if err := tx.Exec(b.String(), args...).Error; err != nil {
			return err
		}
		n = len(ids)
		return tx.Exec("UPDATE order_event_cursor SET seq = ? WHERE id = 1", cursor.Seq+int64(n)).Error
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	return n, err
}

// Events returns up to limit sequenced events after seq after, in seq
// order, and the seq to continue after (after itself when there are
// none yet): the feed.
func (db *DB) Events(ctx context.Context, after int64, limit int) ([]seckill.Event, int64, error) {
	var rows []eventRow
	if err := db.gorm.WithContext(ctx).Where("seq > ?", after).Order("seq").Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, err
	}
	out := make([]seckill.Event, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
		after = *rows[i].Seq
	}
	return out, after, nil
}

// dueEventsSQL picks the due events: a range of order_events_due (only
// an event waiting for delivery has a next_at), each checked for an
// earlier undelivered event of its order through order_events_order. Its
// plan is pinned by TestDueEventsReadOnlyTheDue.
const dueEventsSQL = `SELECT e.* FROM order_events e
	WHERE e.next_at <= ? AND e.delivered_at IS NULL AND e.parked_at IS NULL AND e.seq IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM order_events p
		WHERE p.order_no = e.order_no AND p.delivered_at IS NULL AND p.seq < e.seq)
	ORDER BY e.seq LIMIT ?`

// DueEvents lists up to limit events the relay should send now, in seq
// order: sequenced, undelivered, not parked, due, and the first
// undelivered event of their order, so an order's events go out one at a
// time in order, and an event waits while an earlier one of its order is
// failing or parked.
func (db *DB) DueEvents(ctx context.Context, limit int) ([]seckill.Event, error) {
	var rows []eventRow
	if err := db.gorm.WithContext(ctx).Raw(dueEventsSQL, db.now(), limit).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.Event, len(rows))
	for i := range rows {
		out[i] = rows[i].domain()
	}
	return out, nil
}

// ClaimEvent moves a due event's next try lease into the future, so that
// no other relay sends it meanwhile, and this one only again if its send
// is lost. False means another relay claimed it first, or it is no longer
// due.
func (db *DB) ClaimEvent(ctx context.Context, eventID string, lease time.Duration) (bool, error) {
	id, err := eventRowID(eventID)
	if err != nil {
		return false, err
	}
	now := db.now()
	res := db.gorm.WithContext(ctx).Model(&eventRow{}).
		Where("id = ? AND delivered_at IS NULL AND parked_at IS NULL AND next_at <= ?", id, now).
		Update("next_at", now.Add(lease))
	return res.RowsAffected == 1, res.Error
}

// MarkEventDelivered records that the receiver took an event; the next
// event of its order becomes due.
func (db *DB) MarkEventDelivered(ctx context.Context, eventID string) error {
	id, err := eventRowID(eventID)
	if err != nil {
		return err
	}
	return db.gorm.WithContext(ctx).Model(&eventRow{}).Where("id = ? AND delivered_at IS NULL", id).
		Updates(map[string]any{"delivered_at": db.now(), "next_at": nil}).Error
}

// LetUnsentEventsGo ends the push of up to limit events due since before
// before, oldest first: done (delivered_at) and marked unsent, so they
// no longer wait for delivery. For a relay without an endpoint, whose
// events nobody receives: the push's backlog stays bounded, the feed keeps
// every event. Parked events stay for ops, and an event a relay is
// sending or backing off is due later, not before. It returns how many
// went.
func (db *DB) LetUnsentEventsGo(ctx context.Context, before time.Time, limit int) (int, error) {
	res := db.gorm.WithContext(ctx).Exec(`UPDATE order_events SET delivered_at = ?, unsent = TRUE, next_at = NULL
		WHERE next_at < ? AND delivered_at IS NULL AND parked_at IS NULL
		ORDER BY next_at LIMIT ?`, db.now(), before, limit)
	return int(res.RowsAffected), res.Error
}

// maxEventError is the width of order_events.last_error.
const maxEventError = 512

// RecordEventFailure counts a failed delivery: the next try waits the
// policy's backoff, or the event is parked once it failed policy.Attempts
// times. It returns where the event stands.
func (db *DB) RecordEventFailure(ctx context.Context, eventID, reason string, policy seckill.Retry) (*seckill.EventState, error) {
	id, err := eventRowID(eventID)
	if err != nil {
		return nil, err
	}
	if len(reason) > maxEventError {
		reason = reason[:maxEventError]
	}
	var st *seckill.EventState
	now := db.now()
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row eventRow
		err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return seckill.Errorf(seckill.ENOTFOUND, "event %s not found", eventID)
		} else if err != nil {
			return err
		}
		if row.DeliveredAt != nil {
			st = row.state()
			return nil // delivered meanwhile (a lease that ran out): not a failure
		}
		row.Attempts++
		row.LastError = reason
		if policy.Park(row.Attempts) {
			row.ParkedAt, row.NextAt = &now, nil
		} else {
			next := now.Add(policy.Backoff(row.Attempts))
			row.NextAt = &next
		}
		st = row.state()
		return tx.Model(&eventRow{}).Where("id = ?", id).Updates(map[string]any{
			"attempts": row.Attempts, "last_error": row.LastError, "next_at": row.NextAt, "parked_at": row.ParkedAt,
		}).Error
	})
	return st, err
}

// RetryEvent gives an undelivered event (parked or not) a fresh round: due
// now, its failed tries forgotten. NOT_FOUND when there is no such
// undelivered event.
func (db *DB) RetryEvent(ctx context.Context, eventID string) error {
	id, err := eventRowID(eventID)
	if err != nil {
		return err
	}
	res := db.gorm.WithContext(ctx).Model(&eventRow{}).Where("id = ? AND delivered_at IS NULL", id).
		Updates(map[string]any{"parked_at": nil, "attempts": 0, "next_at": db.now()})
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return seckill.Errorf(seckill.ENOTFOUND, "event %s is not waiting for delivery", eventID)
	}
	return nil
}

// RetryParkedEvents gives every parked event a fresh round and returns
// how many.
func (db *DB) RetryParkedEvents(ctx context.Context) (int, error) {
	res := db.gorm.WithContext(ctx).Model(&eventRow{}).Where("delivered_at IS NULL AND parked_at IS NOT NULL").
		Updates(map[string]any{"parked_at": nil, "attempts": 0, "next_at": db.now()})
	return int(res.RowsAffected), res.Error
}

// EventStates lists up to limit undelivered events, for ops, oldest first.
func (db *DB) EventStates(ctx context.Context, limit int) ([]seckill.EventState, error) {
	var rows []eventRow
	if err := db.gorm.WithContext(ctx).Where("delivered_at IS NULL").Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]seckill.EventState, len(rows))
	for i := range rows {
		out[i] = *rows[i].state()
	}
	return out, nil
}

// EventCounts counts the undelivered events by state (seckill.EventPending,
// EventParked), for the metrics.
func (db *DB) EventCounts(ctx context.Context) (map[string]int, error) {
	var rows []struct {
		Parked bool
		N      int
	}
	if err := db.gorm.WithContext(ctx).Model(&eventRow{}).Select("parked_at IS NOT NULL AS parked, COUNT(*) AS n").
		Where("delivered_at IS NULL").Group("parked").Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := map[string]int{seckill.EventPending: 0, seckill.EventParked: 0}
	for _, r := range rows {
		if r.Parked {
			out[seckill.EventParked] += r.N
		} else {
			out[seckill.EventPending] += r.N
		}
	}
	return out, nil
}
