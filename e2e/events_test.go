package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/signature"
	"github.com/seckill/seckill/temporal"
)

// receiveEvents points the Env's events relay (as `seckill worker` builds
// it from SECKILL_EVENTS_*) at a receiver that checks each delivery's
// signature, runs the relay, and returns what the receiver took: each
// event once, in the order taken.
func receiveEvents(t *testing.T, e *testenv.Env) func() []seckill.Event {
	secret := "e2e-events-secret"
	var mu sync.Mutex
	var got []seckill.Event
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || signature.Verify([]byte(secret), r.Header.Get(signature.Header), body, time.Now()) != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev seckill.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.ContainsFunc(got, func(g seckill.Event) bool { return g.ID == ev.ID }) {
			got = append(got, ev)
		}
	}))
	t.Cleanup(receiver.Close)
	e.App.Config.EventsURL, e.App.Config.EventsSecret = receiver.URL, secret
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go e.App.EventsRelay().Run(ctx, 100*time.Millisecond)
	return func() []seckill.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// A real sale with the events out: one order is paid, another times out;
// the worker's events relay delivers to the receiver, signed, each once,
// with the order as it became and the events' API version: order.created
// (WAIT_PAY, with its pay_deadline) for each order, then order.paid and
// order.closed.
func TestOrderEventsOfASale(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	sess := e.Session(3, 1, 900)
	ctx := context.Background()
	received := receiveEvents(t, e)

	payer, idler := e.Token(1), e.Token(2)
	paidNo, idleNo := buyOrder(t, e, sess.ID, payer), buyOrder(t, e, sess.ID, idler)
	code, err := e.Provider.Pay(ctx, seckill.Payment{PaymentID: fmt.Sprintf("pay-events-%d", time.Now().UnixNano()), OrderNo: paidNo, AmountCents: 900})
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(payer, paidNo, 20*time.Second, seckill.StatusPaid)
	e.WaitStatus(idler, idleNo, 20*time.Second, seckill.StatusClosed)

	e.Eventually(20*time.Second, "the four events at the receiver", func() error {
		if got := received(); len(got) != 4 {
			return fmt.Errorf("%d events: %v", len(got), got)
		}
		return nil
	})
	byOrder := map[string]seckill.Order{}
	types := map[string][]seckill.EventType{}
	for _, ev := range received() {
		require.Equal(t, seckill.EventAPIVersion, ev.APIVersion)
		var o seckill.Order
		require.NoError(t, json.Unmarshal(ev.Order, &o))
		byOrder[o.OrderNo], types[o.OrderNo] = o, append(types[o.OrderNo], ev.Type)
		if ev.Type == seckill.EventOrderCreated {
			require.Equal(t, seckill.StatusWaitPay, o.Status)
			require.False(t, o.PayDeadline.IsZero(), "pay by")
		}
	}
	require.Equal(t, map[string][]seckill.EventType{
		paidNo: {seckill.EventOrderCreated, seckill.EventOrderPaid},
		idleNo: {seckill.EventOrderCreated, seckill.EventOrderClosed},
	}, types, "each order's events in order, each once")
	require.Equal(t, seckill.StatusPaid, byOrder[paidNo].Status)
	require.Equal(t, int64(900), byOrder[paidNo].AmountCents)
	require.Equal(t, seckill.StatusClosed, byOrder[idleNo].Status)
	states, err := e.DB.EventStates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, states, "every event delivered")
	e.RequireInvariants(sess.ID)
}

// heldRefunds is a payment provider whose refunds fail while held: an
// outage at the provider, or a refund it keeps for review.
type heldRefunds struct {
	*sandbox.Provider
	held *atomic.Bool
}

func (p heldRefunds) Refund(ctx context.Context, r seckill.Refund) (string, error) {
	if p.held.Load() {
		return "", errors.New("provider: refunds are under review")
	}
	return p.Provider.Refund(ctx, r)
}

// An operator refunds a paid order while the provider holds refunds back:
// fulfilment hears order.refund_pending at once (pushed, signed, and in
// the feed), after order.paid and long before the money moves; once the
// provider refunds, order.refunded follows, in that order, each event once.
func TestOperatorRefundIsAnnouncedBeforeTheMoneyMoves(t *testing.T) {
	var held atomic.Bool
	held.Store(true)
	e := testenv.New(t, testenv.Options{WrapPayments: func(p *sandbox.Provider) seckill.PaymentProvider {
		return heldRefunds{p, &held}
	}})
	sess := e.Session(2, 1, 900)
	ctx := context.Background()
	pushed := receiveEvents(t, e)

	// statuses are the order's events as the receiver and the feed have
	// them: their types, each checked against its order snapshot.
	statuses := func(events []seckill.Event) []seckill.EventType {
		var types []seckill.EventType
		for _, ev := range events {
			var o seckill.Order
			require.NoError(t, json.Unmarshal(ev.Order, &o))
			typ, ok := seckill.EventFor(o.Status)
			require.True(t, ok)
			require.Equal(t, typ, ev.Type, "the snapshot is the order as the change left it")
			types = append(types, ev.Type)
		}
		return types
	}
	feed := func() []seckill.EventType {
		r := e.Do("GET", "/admin/v1/events?limit=1000", testenv.AdminToken, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		var page struct{ Events []seckill.Event }
		require.NoError(t, json.Unmarshal(r.Raw, &page))
		return statuses(page.Events)
	}
	until := func(what string, want ...seckill.EventType) {
		e.Eventually(20*time.Second, what, func() error {
			if got := statuses(pushed()); !slices.Equal(got, want) {
				return fmt.Errorf("pushed %v", got)
			}
			if got := feed(); !slices.Equal(got, want) {
				return fmt.Errorf("feed %v", got)
			}
			return nil
		})
	}

	tok := e.Token(1)
	no := buyOrder(t, e, sess.ID, tok)
	payment := fmt.Sprintf("pay-refund-events-%d", time.Now().UnixNano())
	code, err := e.Provider.Pay(ctx, seckill.Payment{PaymentID: payment, OrderNo: no, AmountCents: 900})
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	until("order.paid out", seckill.EventOrderCreated, seckill.EventOrderPaid)

	r := e.Do("POST", "/admin/v1/orders/"+no+"/refund", e.OperatorToken("alice", seckill.RoleOperator),
		map[string]string{"reason": "customer cancelled"}, "Idempotency-Key", "refund-"+payment)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	// The provider refuses the refund's first run: the money stays, the
	// refund waits for its next run.
	refunds := &relay.Refunds{Store: e.DB, Starter: e.Orders, Views: e.Gate, Log: e.Log}
	n, err := refunds.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.Eventually(20*time.Second, "the refund's run failed", func() error {
		st, err := e.DB.RefundStates(ctx, 10)
		if err != nil || len(st) != 1 || st[0].Attempts != 1 {
			return fmt.Errorf("refunds %+v %v", st, err)
		}
		return nil
	})
	until("order.refund_pending out while the provider holds the refund", seckill.EventOrderCreated, seckill.EventOrderPaid, seckill.EventOrderRefundPending)
	require.Equal(t, "REFUND_PENDING", e.Do("GET", "/api/v1/orders/"+no, tok, nil).Str("status"))

	require.Error(t, e.Temporal.GetWorkflow(ctx, temporal.RefundWorkflowID(payment), "").Get(ctx, nil), "the run failed")

	held.Store(false)
	require.NoError(t, e.DB.RetryRefund(ctx, payment)) // `seckill refunds retry`
	n, err = refunds.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusRefunded)
	until("order.refunded out last", seckill.EventOrderCreated, seckill.EventOrderPaid, seckill.EventOrderRefundPending, seckill.EventOrderRefunded)
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 1, rep.Orders[seckill.StatusRefunded])
	require.Equal(t, 2, rep.DBStock)
}
