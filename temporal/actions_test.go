package temporal_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/payments"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal"
)

// What an order costs in Temporal Cloud's billable actions, pinned per path
// on the real dev server (docs/temporal-actions.md says what each one buys):
// a change that adds an action to an order fails here. With
// SECKILL_RECORD_HISTORIES=<dir> the histories are also written there
// (how workflows/testdata's histories are recorded: see its README).
func TestActionsPerOrder(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(4, 1, 100)
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	start := func(path string, user int64, payTimeout time.Duration) string {
		no := fmt.Sprintf("%d-act%d-%s", sess.ID, stamp, path)
		resv, _, err := e.Gate.Admit(ctx, sess, user, 1, no, "trace-act-"+path, time.Now())
		require.NoError(t, err)
		// Built as the API builds it: the deadline from the reservation.
		started, err := e.Orders.Start(ctx, seckill.NewOrderRequest(*resv, sess, payTimeout))
		require.NoError(t, err)
		require.True(t, started)
		e.Eventually(20*time.Second, no+" WAIT_PAY", func() error {
			if st, err := e.Orders.State(ctx, no); err != nil || st.Status != seckill.StatusWaitPay {
				return fmt.Errorf("%v %v", st, err)
			}
			return nil
		})
		return no
	}
	paid, cancelled, timedOut := start("paid", 1, time.Hour), start("cancel", 2, time.Hour), start("timeout", 3, 2*time.Second)
	refunded := start("refund", 4, time.Hour)
	for _, no := range []string{paid, refunded} {
		require.NoError(t, e.Orders.Pay(ctx, &seckill.Payment{EventID: "ev-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: 100, TraceID: "trace-pay"}))
	}
	require.NoError(t, e.Orders.Cancel(ctx, cancelled, "trace-cancel"))

	cost := func(no string) temporal.Cost {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		c, err := temporal.OrderCost(cctx, e.Temporal, no)
		require.NoError(t, err)
		t.Logf("%s: %d actions %v, %d events", no, c.Actions, c.ByKind, c.Events)
		record(t, e, no)
		return c
	}
	// start · CreateOrder (local activity) · pay timer · payment signal ·
	// ApplyPayment (local activity) · OrderStatus=PAID.
	c := cost(paid)
	require.Equal(t, map[string]int{"start": 1, "local_activities": 2, "timers": 1, "signals": 1,
		"search_attribute_upserts": 1}, c.ByKind)
	require.Equal(t, 6, c.Actions)
	// start · CreateOrder · pay timer · cancel signal · CloseAndRelease
	// (local) · OrderStatus=CLOSED.
	c = cost(cancelled)
	require.Equal(t, map[string]int{"start": 1, "local_activities": 2, "timers": 1, "signals": 1,
		"search_attribute_upserts": 1}, c.ByKind)
	require.Equal(t, 6, c.Actions)
	// start · CreateOrder · pay timer · CloseAndRelease (local) ·
	// OrderStatus=CLOSED.
	c = cost(timedOut)
	require.Equal(t, map[string]int{"start": 1, "local_activities": 2, "timers": 1,
		"search_attribute_upserts": 1}, c.ByKind)
	require.Equal(t, 5, c.Actions)

	// Refunded by an operator: the paid path's six, then the refund's own
	// workflow (refund:<payment_id>): start · RefundPayment ·
	// MarkRefunded. The order's workflow has ended; it is not woken.
	orderCost := cost(refunded)
	_, applied, err := (&payments.Refund{Store: e.DB, Gate: e.Gate}).Order(ctx, &seckill.SessionChange{
		Action: seckill.ActionRefund, OrderNo: refunded, Reason: "cost of the refunded path", Actor: "test", RequestID: "refund-" + refunded})
	require.NoError(t, err)
	require.True(t, applied)
	relayed := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log}
	n, err := relayed.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	refundCost, err := temporal.RefundCost(rctx, e.Temporal, "pay-"+refunded)
	require.NoError(t, err)
	c = orderCost.Plus(refundCost)
	require.Equal(t, map[string]int{"start": 2, "local_activities": 2, "timers": 1, "signals": 1,
		"search_attribute_upserts": 1, "activities": 2}, c.ByKind)
	require.Equal(t, 9, c.Actions)
	o, err := e.DB.Order(ctx, refunded)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefunded, o.Status)
	e.RequireInvariants(sess.ID)
}

// record writes an order's history as JSON (the Temporal CLI's format,
// which the replayer reads) when SECKILL_RECORD_HISTORIES names a directory.
func record(t *testing.T, e *testenv.Env, orderNo string) {
	dir := os.Getenv("SECKILL_RECORD_HISTORIES")
	if dir == "" {
		return
	}
	h := &historypb.History{}
	it := e.Temporal.GetWorkflowHistory(context.Background(), temporal.WorkflowID(orderNo), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "history_"+orderNo+".json"), b, 0o644))
}

// The rules on the recorded histories (no service needed): each path of
// the order workflow, and an order paid by signal-with-start (the payment
// applied before any pay timer).
func TestCountActionsOfRecordedHistories(t *testing.T) {
	for name, want := range map[string][2]int{ // actions, events
		"history_paid.json": {6, 14}, "history_cancelled.json": {6, 14}, "history_timeout.json": {5, 13},
		"history_paid_sws.json": {3, 9},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "workflows", "testdata", name))
			require.NoError(t, err)
			defer f.Close()
			h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)
			c := temporal.CountActions(h.GetEvents())
			require.Equal(t, want, [2]int{c.Actions, c.Events}, "%v", c.ByKind)
		})
	}
}
