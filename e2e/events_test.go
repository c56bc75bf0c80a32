package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A real sale with the events out: one order is paid, another times out;
// the worker's events relay (as `seckill worker` builds it from
// SECKILL_EVENTS_*) delivers order.paid and order.closed to the receiver,
// signed, each once, with the order as it became.
func TestOrderEventsOfASale(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	sess := e.Session(3, 1, 900)
	ctx := context.Background()
	secret := "e2e-events-secret"
	var mu sync.Mutex
	got := map[string]seckill.Event{} // by event id
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || seckill.VerifyWebhook([]byte(secret), r.Header.Get(seckill.HeaderSignature), body, time.Now()) != nil {
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
		got[ev.ID] = ev
	}))
	t.Cleanup(receiver.Close)
	e.App.Config.EventsURL, e.App.Config.EventsSecret = receiver.URL, secret
	rctx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go e.App.EventsRelay().Run(rctx, 200*time.Millisecond)

	payer, idler := e.Token(1), e.Token(2)
	paidNo, idleNo := buyOrder(t, e, sess.ID, payer), buyOrder(t, e, sess.ID, idler)
	code, err := e.Provider.Pay(ctx, paidNo, fmt.Sprintf("pay-events-%d", time.Now().UnixNano()), 900)
	require.NoError(t, err)
	require.Equal(t, 200, code)
	e.WaitStatus(payer, paidNo, 20*time.Second, seckill.StatusPaid)
	e.WaitStatus(idler, idleNo, 20*time.Second, seckill.StatusClosed)

	e.Eventually(20*time.Second, "both events at the receiver", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			return fmt.Errorf("%d events: %v", len(got), got)
		}
		return nil
	})
	mu.Lock()
	byOrder := map[string]seckill.Order{}
	types := map[string]seckill.EventType{}
	for _, ev := range got {
		var o seckill.Order
		require.NoError(t, json.Unmarshal(ev.Order, &o))
		byOrder[o.OrderNo], types[o.OrderNo] = o, ev.Type
	}
	mu.Unlock()
	require.Equal(t, map[string]seckill.EventType{paidNo: seckill.EventOrderPaid, idleNo: seckill.EventOrderClosed}, types)
	require.Equal(t, seckill.StatusPaid, byOrder[paidNo].Status)
	require.Equal(t, int64(900), byOrder[paidNo].AmountCents)
	require.Equal(t, seckill.StatusClosed, byOrder[idleNo].Status)
	states, err := e.DB.EventStates(ctx, 10)
	require.NoError(t, err)
	require.Empty(t, states, "every event delivered")
	e.RequireInvariants(sess.ID)
}
