package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// The table names each event's state, id, type, order, attempts, when
// (next attempt, parked since) and last error.
func TestPrintEventsTable(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	states := []seckill.EventState{
		{Event: seckill.Event{ID: "evt_7", Type: seckill.EventOrderPaid, OrderNo: "7-p"}, State: seckill.EventParked,
			Attempts: 20, LastError: "receiver answered 500", ParkedAt: now.Add(-time.Hour)},
		{Event: seckill.Event{ID: "evt_8", Type: seckill.EventOrderClosed, OrderNo: "7-c"}, State: seckill.EventPending,
			Attempts: 2, LastError: "receiver answered 503", NextAttemptAt: now.Add(90 * time.Second)},
		{Event: seckill.Event{ID: "evt_9", Type: seckill.EventOrderRefunded, OrderNo: "7-p"}, State: seckill.EventPending},
	}
	var buf bytes.Buffer
	require.NoError(t, printEvents(&buf, states, false, now))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4)
	require.Equal(t, []string{"STATE", "EVENT_ID", "TYPE", "ORDER_NO", "ATTEMPTS", "WHEN", "LAST_ERROR"}, strings.Fields(lines[0]))
	require.Regexp(t, `^parked +evt_7 +order.paid +7-p +20 +parked 1h0m0s ago \(2026-01-02T02:04:05Z\) +receiver answered 500$`, lines[1])
	require.Regexp(t, `^pending +evt_8 +order.closed +7-c +2 +next in 1m30s +receiver answered 503$`, lines[2])
	require.Regexp(t, `^pending +evt_9 +order.refunded +7-p +0 +next: now$`, lines[3])

	buf.Reset()
	require.NoError(t, printEvents(&buf, nil, false, now))
	require.Equal(t, "no events waiting for delivery\n", buf.String())
}

// `seckill events` lists a parked event from MySQL; `seckill events retry
// EVENT_ID` and `--all-parked` make parked events due again; an unknown
// event is an error.
func TestEventsCommand(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	t.Setenv("SECKILL_MYSQL_DSN", e.DSN)
	sess := e.Session(3, 1, 250)
	ctx := context.Background()
	for i := range 2 {
		no := fmt.Sprintf("%d-cli%d", sess.ID, i)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: int64(i + 1),
			Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: 250}
		_, _, err := e.DB.CloseOrder(ctx, req, "cancelled")
		require.NoError(t, err)
	}
	_, err := e.DB.SequenceEvents(ctx, 10)
	require.NoError(t, err)
	due, err := e.DB.DueEvents(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 2)
	for _, ev := range due {
		_, err = e.DB.RecordEventFailure(ctx, ev.ID, "receiver answered 410: gone", seckill.Retry{First: time.Second, Attempts: 1})
		require.NoError(t, err)
	}

	run := func(args ...string) (string, error) { return execute(ctx, args...) }
	out, err := run("events", "--json")
	require.NoError(t, err)
	var listed struct {
		Events []struct {
			seckill.EventState
			OrderNo string `json:"order_no"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Events, 2)
	ev := listed.Events[0]
	require.Equal(t, due[0].ID, ev.ID)
	require.Equal(t, seckill.EventOrderClosed, ev.Type)
	require.Equal(t, fmt.Sprintf("%d-cli0", sess.ID), ev.OrderNo)
	require.Equal(t, seckill.EventParked, ev.State)
	require.Equal(t, 1, ev.Attempts)
	require.Equal(t, "receiver answered 410: gone", ev.LastError)
	require.False(t, ev.ParkedAt.IsZero())

	out, err = run("events", "retry", due[0].ID)
	require.NoError(t, err)
	require.Contains(t, out, due[0].ID+" is due now")
	out, err = run("events")
	require.NoError(t, err)
	require.Regexp(t, `pending +`+due[0].ID+` +order.closed +`+ev.OrderNo+` +0 +next: now`, out)
	require.Regexp(t, `parked +`+due[1].ID, out)
	out, err = run("events", "retry", "--all-parked")
	require.NoError(t, err)
	require.Contains(t, out, "1 parked event is due now")
	due, err = e.DB.DueEvents(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 2, "both due again")
	_, err = run("events", "retry", "evt_999999")
	require.ErrorContains(t, err, "not waiting for delivery")
	_, err = run("events", "retry")
	require.ErrorContains(t, err, "--all-parked")
}
