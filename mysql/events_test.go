package mysql_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// sequenceAll sequences every visible event.
func sequenceAll(t *testing.T, e *testenv.Env) {
	for {
		n, err := e.DB.SequenceEvents(context.Background(), 100)
		require.NoError(t, err)
		if n == 0 {
			return
		}
	}
}

// feed reads the whole feed from the start.
func feed(t *testing.T, e *testenv.Env) []seckill.Event {
	var all []seckill.Event
	var after int64
	for {
		page, next, err := e.DB.Events(context.Background(), after, 3)
		require.NoError(t, err)
		if len(page) == 0 {
			require.Equal(t, after, next, "an empty page continues where it was asked")
			return all
		}
		all, after = append(all, page...), next
	}
}

// Each change to WAIT_PAY (a created order, alone or in a batch; a retried
// create makes none), PAID, CLOSED (a close and a tombstone), FAILED (a
// single refusal and refusals in a batch), REFUND_PENDING (a late payment)
// and REFUNDED emits exactly one event, with the order as the change left
// it and the events' API version; an order's events come in the order of
// its changes, order.created first; a change that rolls back leaves no
// event.
func TestEventsRecordedWithTheirChange(t *testing.T) {
	e, sess := store(t, 2, 1)
	ctx := context.Background()
	create := func(no string, user int64, qty int) *seckill.OrderRequest {
		req := request(sess, no, user, qty, 1)
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		return req
	}
	paid := create("1-paid", 1, 1)
	_, err := e.DB.CreateOrder(ctx, paid, time.Now().Add(time.Minute)) // the activity retried: no second event
	require.NoError(t, err)
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-p", PaymentID: "pay-p", OrderNo: "1-paid", AmountCents: 100})
	require.NoError(t, err)
	closed := create("1-closed", 2, 1)
	_, _, err = e.DB.CloseOrder(ctx, closed, "pay_timeout")
	require.NoError(t, err)
	_, _, err = e.DB.CloseOrder(ctx, request(sess, "1-tomb", 3, 1, 1), "cancelled") // its row never came
	require.NoError(t, err)
	create("1-big", 4, 2) // 1 unit left: refused, FAILED
	// Eight orders of one user's one slot at once: one takes it, seven fail
	// (in one batch transaction when they arrive together); each comes
	// twice, as a retried activity's would, in the same batch or the next.
	counts := createConcurrently(t, e, 16, time.Minute, func(i int) *seckill.OrderRequest {
		return request(sess, fmt.Sprintf("1-slot%d", i%8), 5, 1, 1)
	})
	require.Equal(t, map[seckill.Status]int{seckill.StatusWaitPay: 2, seckill.StatusFailed: 14}, counts, "each call sees its order")
	// The closed order is paid late and refunded.
	_, _, err = e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-l", PaymentID: "pay-l", OrderNo: "1-closed", AmountCents: 100})
	require.NoError(t, err)
	_, err = e.DB.MarkRefunded(ctx, "pay-l", "re-l")
	require.NoError(t, err)
	_, err = e.DB.MarkRefunded(ctx, "pay-l", "re-l") // again: no change, no event
	require.NoError(t, err)

	sequenceAll(t, e)
	events := feed(t, e)
	byOrder := map[string][]seckill.EventType{}
	ids := map[string]bool{}
	for _, ev := range events {
		require.False(t, ids[ev.ID], "event id %s twice", ev.ID)
		ids[ev.ID] = true
		byOrder[ev.OrderNo] = append(byOrder[ev.OrderNo], ev.Type)
		var o seckill.Order
		require.NoError(t, json.Unmarshal(ev.Order, &o))
		require.Equal(t, ev.OrderNo, o.OrderNo)
		typ, ok := seckill.EventFor(o.Status)
		require.True(t, ok)
		require.Equal(t, ev.Type, typ, "the snapshot is the order as the change left it")
		require.False(t, ev.At.IsZero())
		require.Equal(t, seckill.EventAPIVersion, ev.APIVersion)
		require.Nil(t, ev.Registration)
		if ev.Type == seckill.EventOrderCreated {
			require.False(t, o.PayDeadline.IsZero(), "order.created says when to pay by")
		}
	}
	failed, slotted := 0, 0
	for no, types := range byOrder {
		switch types[0] {
		case seckill.EventOrderFailed:
			require.Equal(t, []seckill.EventType{seckill.EventOrderFailed}, types, no)
			failed++
		case seckill.EventOrderCreated:
			if no != "1-paid" && no != "1-closed" {
				require.Equal(t, []seckill.EventType{seckill.EventOrderCreated}, types, no)
				slotted++
			}
		}
	}
	require.Equal(t, 8, failed, "1-big and seven of the slot's orders")
	require.Equal(t, 1, slotted, "one of the slot's orders, created once")
	require.Equal(t, []seckill.EventType{seckill.EventOrderCreated, seckill.EventOrderPaid}, byOrder["1-paid"])
	require.Equal(t, []seckill.EventType{seckill.EventOrderCreated, seckill.EventOrderClosed, seckill.EventOrderRefundPending,
		seckill.EventOrderRefunded}, byOrder["1-closed"])
	require.Equal(t, []seckill.EventType{seckill.EventOrderClosed}, byOrder["1-tomb"])
	require.Len(t, events, 16)

	// The last snapshot of an order is its row as stored, to the millisecond.
	last := events[len(events)-1]
	require.Equal(t, "1-closed", last.OrderNo)
	var snap seckill.Order
	require.NoError(t, json.Unmarshal(last.Order, &snap))
	row, err := e.DB.Order(ctx, "1-closed")
	require.NoError(t, err)
	require.Equal(t, row.Status, snap.Status)
	require.True(t, row.UpdatedAt.Equal(snap.UpdatedAt), "row %s, snapshot %s", row.UpdatedAt, snap.UpdatedAt)

	// A close whose transaction rolls back leaves its order WAIT_PAY and
	// no event.
	var open *seckill.OrderRequest
	for i := range 8 {
		if o, err := e.DB.Order(ctx, fmt.Sprintf("1-slot%d", i)); err == nil && o.Status == seckill.StatusWaitPay {
			open = request(sess, o.OrderNo, 5, 1, 1)
		}
	}
	require.NotNil(t, open)
	require.NoError(t, e.DB.CloseRolledBackForTest(ctx, open))
	o, err := e.DB.Order(ctx, open.OrderNo)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusWaitPay, o.Status)
	sequenceAll(t, e)
	require.Len(t, feed(t, e), 16)
	changes, err := e.DB.EventfulChangesForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, byOrder, changes, "one event per eventful ledger row")
}

// The feed under load: writers change orders concurrently (their
// transactions commit in any order) while a sequencer runs and a reader
// pages from cursor to cursor. The reader sees every event exactly once
// (as many as the ledger's eventful rows), each order's in the order of
// its changes.
func TestEventFeedUnderConcurrentWriters(t *testing.T) {
	const writers, perWriter = 6, 12
	e, sess := store(t, writers*perWriter, 1)
	ctx := context.Background()

	done := make(chan struct{})
	var bg sync.WaitGroup
	// until runs step again and again until done.
	until := func(step func()) {
		bg.Add(1)
		go func() {
			defer bg.Done()
			for {
				select {
				case <-done:
					return
				default:
					step()
				}
			}
		}()
	}
	until(func() { // the sequencer, as the worker's relay runs it
		_, err := e.DB.SequenceEvents(ctx, 5)
		require.NoError(t, err)
		time.Sleep(time.Millisecond)
	})
	var read []seckill.Event
	var after int64
	readPage := func() int {
		page, next, err := e.DB.Events(ctx, after, 4)
		require.NoError(t, err)
		read, after = append(read, page...), next
		return len(page)
	}
	until(func() { // the consumer, polling the feed while it grows
		if readPage() == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	})

	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				no := fmt.Sprintf("%d-w%d-%d", sess.ID, w, i)
				req := request(sess, no, int64(w*perWriter+i+1), 1, 1)
				_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
				require.NoError(t, err)
				pay := &seckill.Payment{EventID: "evt-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: 100}
				switch i % 3 {
				case 0:
					_, _, err = e.DB.ApplyPayment(ctx, pay)
				case 1:
					_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
				case 2: // closed, paid late, refunded: three events
					_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
					require.NoError(t, err)
					_, _, err = e.DB.ApplyPayment(ctx, pay)
					require.NoError(t, err)
					_, err = e.DB.MarkRefunded(ctx, pay.PaymentID, "re-"+no)
				}
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	close(done)
	bg.Wait()
	sequenceAll(t, e)
	for readPage() > 0 {
	}

	changes, err := e.DB.EventfulChangesForTest(ctx)
	require.NoError(t, err)
	total := 0
	for _, types := range changes {
		total += len(types)
	}
	require.Equal(t, writers*perWriter*8/3, total, "order.created and the changes after it")
	require.Equal(t, total, len(read), "every event once")
	seen := map[string]bool{}
	byOrder := map[string][]seckill.EventType{}
	for _, ev := range read {
		require.False(t, seen[ev.ID], "event %s read twice", ev.ID)
		seen[ev.ID] = true
		byOrder[ev.OrderNo] = append(byOrder[ev.OrderNo], ev.Type)
	}
	require.Equal(t, changes, byOrder, "each order's events in the order of its changes")
}

// The relay's pick of due events reads the due events only, through the
// index on next_at, however many others were delivered, are parked, or
// wait on a backoff (a receiver's outage): a pass costs what it sends.
func TestDueEventsReadOnlyTheDue(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	ctx := context.Background()
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer db.Close()
	// A receiver was down for a while: most events delivered, many backing
	// off, some parked, a few due now (one of them behind an earlier
	// backing-off event of its order).
	for _, q := range []string{
		`INSERT INTO order_events (seq, type, order_no, order_json, created_at, delivered_at)
			SELECT seq, 'order.paid', CONCAT('1-d', seq), '{}', NOW(3), NOW(3) FROM seq_1_to_3000`,
		`INSERT INTO order_events (seq, type, order_no, order_json, created_at, attempts, next_at)
			SELECT seq, 'order.paid', CONCAT('1-b', seq), '{}', NOW(3), 3, NOW(3) + INTERVAL 10 MINUTE FROM seq_3001_to_3800`,
		`INSERT INTO order_events (seq, type, order_no, order_json, created_at, attempts, parked_at)
			SELECT seq, 'order.paid', CONCAT('1-p', seq), '{}', NOW(3), 20, NOW(3) FROM seq_3801_to_3900`,
		`INSERT INTO order_events (seq, type, order_no, order_json, created_at, next_at)
			SELECT seq, 'order.paid', CONCAT('1-n', seq), '{}', NOW(3), NOW(3) - INTERVAL 1 SECOND FROM seq_3901_to_3905`,
		`INSERT INTO order_events (seq, type, order_no, order_json, created_at, next_at)
			VALUES (3906, 'order.refund_pending', '1-b3001', '{}', NOW(3), NOW(3) - INTERVAL 1 SECOND)`,
		`UPDATE order_event_cursor SET seq = 3906`,
		`ANALYZE TABLE order_events`,
	} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	due, err := e.DB.DueEvents(ctx, 200)
	require.NoError(t, err)
	require.Len(t, due, 5, "the due heads of their orders")
	keys, rows, err := e.DB.ExplainDueEventsForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, "order_events_due", keys["e"], "the due events are a range of next_at")
	require.Equal(t, "order_events_order", keys["p"], "an order's earlier events by its order number")
	require.Less(t, rows, int64(100), "MariaDB expects to read the due events, not the backlog")
}
