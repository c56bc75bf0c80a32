package relay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/worker"
)

// failingProvider is the payment provider as an external system that
// refuses: each payment id fails its first fails[id] calls (-1: every call
// until healed), then refunds like the sandbox.
type failingProvider struct {
	mu    sync.Mutex
	fails map[string]int
	calls map[string]int
}

func (p *failingProvider) Refund(_ context.Context, r seckill.Refund) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[r.PaymentID]++
	if n := p.fails[r.PaymentID]; n != 0 {
		if n > 0 {
			p.fails[r.PaymentID] = n - 1
		}
		return "", errors.New("provider: 503 service unavailable")
	}
	return "re_" + r.PaymentID, nil
}

func (p *failingProvider) set(id string, fails int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fails[id] = fails
}

func (p *failingProvider) callsOf(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[id]
}

// Refunds through a provider that fails: a refund that fails a few times
// is retried after a backoff and succeeds; one that keeps failing is
// parked after the policy's runs (visible with its attempts and last
// error, counted in the metrics, never started again on its own) while a
// newer refund goes through meanwhile; retried by hand once the provider
// is fixed, it is refunded. Real MySQL and Temporal; only the provider is
// fake.
func TestRefundRetriesAndParking(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(6, 3, 100)
	ctx := context.Background()
	m := metrics.New()
	prov := &failingProvider{fails: map[string]int{}, calls: map[string]int{}}
	refunds := &activities.Refunds{Store: e.DB, Gate: e.Gate, Provider: prov, Metrics: m,
		Retry: seckill.RefundRetry{First: 200 * time.Millisecond, Max: 400 * time.Millisecond, Attempts: 2}}
	w := worker.New(e.Temporal, e.TaskQueue, e.Activities(), refunds, &activities.Reconciler{Store: e.DB, Gate: e.Gate}, &activities.Sessions{Store: e.DB, Gate: e.Gate})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	// Workflow ids outlive the test database on the shared Temporal server.
	u := fmt.Sprint(time.Now().UnixNano())
	latePayment := func(name string, user int64) string {
		no := fmt.Sprintf("%d-%s-%s", sess.ID, name, u)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: user,
			Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), TraceID: "trace-" + name, SKUID: sess.SKUID},
			PriceCents: sess.PriceCents, PayTimeout: time.Minute}
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
		require.NoError(t, err)
		id := "pay-" + name + "-" + u
		outcome, _, err := e.DB.ApplyPayment(ctx, &seckill.Payment{EventID: "evt-" + id, PaymentID: id, OrderNo: no, AmountCents: 100})
		require.NoError(t, err)
		require.Equal(t, seckill.PaymentRefundPending, outcome)
		return id
	}
	state := func(id string) *seckill.RefundState {
		states, err := e.DB.RefundStates(ctx, 50)
		require.NoError(t, err)
		for i := range states {
			if states[i].PaymentID == id {
				return &states[i]
			}
		}
		return nil // done
	}

	flaky, dead := latePayment("flaky", 1), latePayment("dead", 2)
	prov.set(flaky, 4) // one run is 3 provider calls: the first run fails, the second succeeds
	prov.set(dead, -1)
	r := &relay.Refunds{Store: e.DB, Starter: e.Orders, Views: e.Gate, Log: e.Log, Metrics: m, Lease: 20 * time.Second}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go r.Run(rctx, 100*time.Millisecond)

	e.Eventually(30*time.Second, "the dead refund failed once", func() error {
		if st := state(dead); st == nil || st.Attempts < 1 {
			return fmt.Errorf("dead: %+v", st)
		}
		return nil
	})
	newer := latePayment("newer", 3)
	e.Eventually(30*time.Second, "the flaky and the newer refund went through, the dead one parked", func() error {
		for _, id := range []string{flaky, newer} {
			if st := state(id); st != nil {
				return fmt.Errorf("%s not refunded: %+v", id, st)
			}
		}
		if st := state(dead); st.State != seckill.RefundParked {
			return fmt.Errorf("dead: %+v", st)
		}
		return nil
	})
	require.Equal(t, 5, prov.callsOf(flaky), "4 failures over 2 runs, then the refund")
	st := state(dead)
	require.Equal(t, 2, st.Attempts)
	require.Contains(t, st.LastError, "provider: 503")
	require.False(t, st.ParkedAt.IsZero())
	calls := prov.callsOf(dead)
	require.Equal(t, 6, calls, "two runs of three provider calls")
	time.Sleep(time.Second) // ten relay passes
	require.Equal(t, calls, prov.callsOf(dead), "a parked refund is not tried on its own")
	require.Equal(t, 1.0, testutil.ToFloat64(m.Refunds.WithLabelValues(seckill.RefundParked)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.RefundFailures.WithLabelValues(seckill.RefundParked)))
	require.Equal(t, 2.0, testutil.ToFloat64(m.RefundFailures.WithLabelValues(seckill.RefundDue)), "flaky once, dead once")

	prov.set(dead, 0)
	require.NoError(t, e.DB.RetryRefund(ctx, dead))
	e.Eventually(30*time.Second, "the parked refund, retried by hand", func() error {
		if st := state(dead); st != nil {
			return fmt.Errorf("dead: %+v", st)
		}
		return nil
	})
	for _, id := range []string{flaky, dead, newer} {
		no := fmt.Sprintf("%d-%s-%s", sess.ID, map[string]string{flaky: "flaky", dead: "dead", newer: "newer"}[id], u)
		o, err := e.DB.Order(ctx, no)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusRefunded, o.Status, id)
	}
	e.Eventually(5*time.Second, "gauge", func() error {
		if v := testutil.ToFloat64(m.Refunds.WithLabelValues(seckill.RefundParked)); v != 0 {
			return fmt.Errorf("parked gauge %v", v)
		}
		return nil
	})
}

// RECEIVED payments that cannot settle yet (their order has no row) do
// not hide the newer ones behind them: the relay walks the whole list
// batch by batch, so a payment behind a full batch of stuck ones is
// settled on a later pass, and the stuck ones stay listed.
func TestReceivedPaymentsBehindStuckOnesSettle(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(2, 1, 100)
	ctx := context.Background()
	u := fmt.Sprint(time.Now().UnixNano())
	for i := range 3 {
		no := fmt.Sprintf("%d-stuck%d-%s", sess.ID, i, u)
		_, err := e.DB.RecordPayment(ctx, &seckill.Payment{EventID: "ev-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: 100})
		require.NoError(t, err)
	}
	no := fmt.Sprintf("%d-closed-%s", sess.ID, u)
	req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: 1,
		Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), TraceID: "trace-closed", SKUID: sess.SKUID}, PriceCents: 100}
	_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
	require.NoError(t, err)
	_, err = e.DB.RecordPayment(ctx, &seckill.Payment{EventID: "ev-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: 100})
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond) // older than the relay's (tiny) age

	r := &relay.Refunds{Store: e.DB, Starter: e.Orders, Log: e.Log, ReceivedAge: time.Millisecond, ReceivedBatch: 2}
	status := func() seckill.Status {
		o, err := e.DB.Order(ctx, no)
		require.NoError(t, err)
		return o.Status
	}
	_, err = r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusClosed, status(), "the first batch holds two stuck payments")
	_, err = r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, seckill.StatusRefundPending, status(), "the second batch reaches it: a late payment, to refund")
	states, err := e.DB.RefundStates(ctx, 10)
	require.NoError(t, err)
	received := 0
	for _, s := range states {
		if s.State == seckill.RefundReceived {
			received++
		}
	}
	require.Equal(t, 3, received, "the stuck ones stay listed for ops")
}
