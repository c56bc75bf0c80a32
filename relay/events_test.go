package relay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/signature"
)

var eventSecret = []byte("test-events-secret")

// receiver is the events' receiver: it checks each delivery's signature,
// answers fail(order_no, type, attempt) (0: 200), and records what it took and
// how many deliveries of one event overlapped.
type receiver struct {
	t    *testing.T
	mu   sync.Mutex
	fail func(orderNo string, typ seckill.EventType, attempt int) int
	// slow delays each answer.
	slow     time.Duration
	attempts map[string][]time.Time // by event id
	took     []seckill.Event        // in the order taken
	inFlight map[string]int
	overlap  int // the most deliveries of one event at once
}

func newReceiver(t *testing.T) (*receiver, *httptest.Server) {
	rc := &receiver{t: t, attempts: map[string][]time.Time{}, inFlight: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	require.NoError(rc.t, err)
	require.NoError(rc.t, signature.Verify(eventSecret, r.Header.Get(signature.Header), body, time.Now()))
	require.Equal(rc.t, "application/json", r.Header.Get("Content-Type"))
	var ev seckill.Event
	require.NoError(rc.t, json.Unmarshal(body, &ev))
	var o seckill.Order
	require.NoError(rc.t, json.Unmarshal(ev.Order, &o))
	ev.OrderNo = o.OrderNo
	rc.mu.Lock()
	rc.attempts[ev.ID] = append(rc.attempts[ev.ID], time.Now())
	attempt := len(rc.attempts[ev.ID])
	rc.inFlight[ev.ID]++
	rc.overlap = max(rc.overlap, rc.inFlight[ev.ID])
	fail := rc.fail
	rc.mu.Unlock()
	time.Sleep(rc.slow)
	code := 0
	if fail != nil {
		code = fail(o.OrderNo, ev.Type, attempt)
	}
	rc.mu.Lock()
	rc.inFlight[ev.ID]--
	if code == 0 {
		rc.took = append(rc.took, ev)
	}
	rc.mu.Unlock()
	if code != 0 {
		http.Error(w, "receiver down", code)
	}
}

func (rc *receiver) taken() []seckill.Event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seckill.Event(nil), rc.took...)
}

func (rc *receiver) tries(eventID string) []time.Time {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]time.Time(nil), rc.attempts[eventID]...)
}

// orders makes order events: each name's order is created (order.created)
// and then paid ("paid-…"), closed ("closed-…"), or closed, paid late and
// refunded ("refunded-…": three more events, closed, refund_pending,
// refunded).
func orders(t *testing.T, e *testenv.Env, sess *seckill.Session, names ...string) {
	ctx := context.Background()
	for i, name := range names {
		no := fmt.Sprintf("%d-%s", sess.ID, name)
		req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: int64(100 + i),
			Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), SKUID: sess.SKUID}, PriceCents: sess.PriceCents}
		_, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
		require.NoError(t, err)
		pay := &seckill.Payment{EventID: "evt-" + no, PaymentID: "pay-" + no, OrderNo: no, AmountCents: sess.PriceCents}
		switch name[0] {
		case 'p':
			_, _, err = e.DB.ApplyPayment(ctx, pay)
		case 'c':
			_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
		case 'r':
			_, _, err = e.DB.CloseOrder(ctx, req, "pay_timeout")
			require.NoError(t, err)
			_, _, err = e.DB.ApplyPayment(ctx, pay)
			require.NoError(t, err)
			_, err = e.DB.MarkRefunded(ctx, pay.PaymentID, "re-"+no)
		}
		require.NoError(t, err)
	}
}

func eventsRelay(e *testenv.Env, url string, m *metrics.Metrics) *relay.Events {
	return &relay.Events{Store: e.DB, URL: url, Secret: eventSecret, Log: e.Log, Metrics: m, Timeout: 5 * time.Second,
		Retry: seckill.Retry{First: 200 * time.Millisecond, Max: 400 * time.Millisecond, Attempts: 3}}
}

// Delivery: each event once, signed, with its type, its API version and
// the order as the change left it; an order's events one pass after
// another, in order; nothing is sent twice.
func TestEventRelayDelivers(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 700)
	rc, srv := newReceiver(t)
	orders(t, e, sess, "paid-a", "closed-b")
	m := metrics.New()
	r := eventsRelay(e, srv.URL, m)
	for _, want := range []int{2, 2, 0} { // the orders' heads, then the events behind them
		n, err := r.Pass(context.Background())
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	took := rc.taken()
	require.Len(t, took, 4)
	types := map[string][]seckill.EventType{}
	for _, ev := range took {
		types[ev.OrderNo] = append(types[ev.OrderNo], ev.Type)
		require.Regexp(t, `^evt_\d+$`, ev.ID)
		require.Equal(t, seckill.EventAPIVersion, ev.APIVersion)
		require.WithinDuration(t, time.Now(), ev.At, time.Minute)
		var o seckill.Order
		require.NoError(t, json.Unmarshal(ev.Order, &o))
		require.Equal(t, int64(700), o.AmountCents)
	}
	require.Equal(t, map[string][]seckill.EventType{
		fmt.Sprintf("%d-paid-a", sess.ID):   {seckill.EventOrderCreated, seckill.EventOrderPaid},
		fmt.Sprintf("%d-closed-b", sess.ID): {seckill.EventOrderCreated, seckill.EventOrderClosed},
	}, types)
	require.Equal(t, 4.0, testutil.ToFloat64(m.EventsDelivered))
	require.Equal(t, 0.0, testutil.ToFloat64(m.Events.WithLabelValues(seckill.EventPending)))
}

// A receiver that fails: an event answered 500 twice is sent again after
// the backoff and delivered; one that keeps failing is parked after the
// policy's attempts, and the later event of its order waits behind it
// while other orders' events go on; `retry` sends the parked event, then
// the one behind it, in order.
func TestEventRelayRetriesParksAndKeepsOrderPerOrder(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 700)
	ctx := context.Background()
	rc, srv := newReceiver(t)
	flaky, dead := fmt.Sprintf("%d-closed-flaky", sess.ID), fmt.Sprintf("%d-refunded-dead", sess.ID)
	var mu sync.Mutex
	healed := false
	// The receiver takes every order.created; it fails the flaky order's
	// next event twice, the dead one's until healed.
	rc.fail = func(orderNo string, typ seckill.EventType, attempt int) int {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case typ == seckill.EventOrderCreated:
		case orderNo == flaky && attempt <= 2, orderNo == dead && !healed:
			return http.StatusInternalServerError
		}
		return 0
	}
	orders(t, e, sess, "closed-flaky", "refunded-dead")
	m := metrics.New()
	r := eventsRelay(e, srv.URL, m)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go r.Run(rctx, 20*time.Millisecond)

	states := func() map[string]seckill.EventState {
		list, err := e.DB.EventStates(ctx, 50)
		require.NoError(t, err)
		out := map[string]seckill.EventState{}
		for _, st := range list {
			out[st.OrderNo+" "+string(st.Type)] = st
		}
		return out
	}
	e.Eventually(20*time.Second, "the flaky event delivered, the dead one parked", func() error {
		st := states()
		if _, ok := st[flaky+" order.closed"]; ok {
			return fmt.Errorf("flaky not delivered: %+v", st)
		}
		if st[dead+" order.closed"].State != seckill.EventParked {
			return fmt.Errorf("dead not parked: %+v", st)
		}
		return nil
	})
	orders(t, e, sess, "paid-later") // another order goes on meanwhile
	e.Eventually(10*time.Second, "the later order's events", func() error {
		if n := len(rc.taken()); n != 5 { // three created, flaky's closed, the later's paid
			return fmt.Errorf("%d taken", n)
		}
		return nil
	})
	st := states()
	parked := st[dead+" order.closed"]
	require.Equal(t, 3, parked.Attempts)
	require.Contains(t, parked.LastError, "receiver answered 500")
	behind := []seckill.EventState{st[dead+" order.refund_pending"], st[dead+" order.refunded"]}
	for _, b := range behind {
		require.Equal(t, seckill.EventPending, b.State)
		require.Zero(t, b.Attempts, "never sent while the earlier event of its order is parked")
		require.Empty(t, rc.tries(b.ID))
	}

	var flakyID string
	for _, ev := range rc.taken() {
		if ev.OrderNo == flaky && ev.Type == seckill.EventOrderClosed {
			flakyID = ev.ID
		}
	}
	tries := rc.tries(flakyID)
	require.Len(t, tries, 3)
	require.GreaterOrEqual(t, tries[1].Sub(tries[0]), 200*time.Millisecond, "the first backoff")
	require.GreaterOrEqual(t, tries[2].Sub(tries[1]), 400*time.Millisecond, "the second, doubled")
	time.Sleep(300 * time.Millisecond)
	require.Len(t, rc.tries(parked.ID), 3, "a parked event is not sent on its own")
	require.Equal(t, 1.0, testutil.ToFloat64(m.Events.WithLabelValues(seckill.EventParked)))
	require.Equal(t, 2.0, testutil.ToFloat64(m.Events.WithLabelValues(seckill.EventPending)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.EventFailures.WithLabelValues(seckill.EventParked)))
	require.Equal(t, 4.0, testutil.ToFloat64(m.EventFailures.WithLabelValues(seckill.EventPending)), "flaky twice, dead twice")

	mu.Lock()
	healed = true
	mu.Unlock()
	require.NoError(t, e.DB.RetryEvent(ctx, parked.ID))
	e.Eventually(10*time.Second, "the parked event and the ones behind it, delivered", func() error {
		if n := len(rc.taken()); n != 8 {
			return fmt.Errorf("%d taken", n)
		}
		if st := states(); len(st) != 0 { // the last delivery recorded after the receiver took it
			return fmt.Errorf("waiting: %v", st)
		}
		return nil
	})
	took := rc.taken()
	require.Equal(t, []string{parked.ID, behind[0].ID, behind[1].ID}, []string{took[5].ID, took[6].ID, took[7].ID}, "in the order of the changes")
	require.Error(t, e.DB.RetryEvent(ctx, parked.ID), "delivered: nothing to retry")
}

// A receiver's URL that redirects (http to https, a moved path) is a
// failed delivery naming where it points, for each kind of redirect: a
// 302 followed would have turned the event into a GET that the page
// behind it answered 200, and the event would count as delivered though
// nothing took it. Nothing reaches the redirect's target.
func TestEventRelayFollowsNoRedirect(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 700)
	ctx := context.Background()
	var mu sync.Mutex
	landed := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/landing", func(http.ResponseWriter, *http.Request) { mu.Lock(); landed++; mu.Unlock() })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	for _, code := range codes {
		mux.Handle(fmt.Sprintf("/moved-%d", code), http.RedirectHandler("/landing", code))
	}
	orders(t, e, sess, "closed-a")
	m := metrics.New()
	for _, code := range codes {
		n, err := eventsRelay(e, fmt.Sprintf("%s/moved-%d", srv.URL, code), m).Pass(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "%d: delivered through a redirect", code)
		list, err := e.DB.EventStates(ctx, 50)
		require.NoError(t, err)
		require.Len(t, list, 2, "%d: both events still undelivered", code) // created, closed
		for _, st := range list {
			if st.Type == seckill.EventOrderCreated { // the order's head, the one sent
				require.Equal(t, 1, st.Attempts, "%d", code)
				require.Contains(t, st.LastError, fmt.Sprintf("receiver answered %d, a redirect to /landing:", code))
				require.NoError(t, e.DB.RetryEvent(ctx, st.ID)) // due again, for the next kind
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, landed)
	require.Zero(t, testutil.ToFloat64(m.EventsDelivered))
}

// Two relays (two workers) at once never send one event at the same
// time, and between them deliver every event once.
func TestEventRelaysShareTheWork(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(30, 1, 700)
	rc, srv := newReceiver(t)
	rc.slow = 30 * time.Millisecond
	var names []string
	for i := range 24 {
		names = append(names, fmt.Sprintf("closed-%d", i))
	}
	orders(t, e, sess, names...)
	var wg sync.WaitGroup
	for range 2 {
		r := eventsRelay(e, srv.URL, nil)
		r.Concurrency = 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(rc.taken()) < 2*len(names) { // order.created and order.closed
				_, err := r.Pass(context.Background())
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 1, rc.overlap, "never two deliveries of one event at once")
	seen := map[string]bool{}
	for _, ev := range rc.taken() {
		require.False(t, seen[ev.ID], "%s twice", ev.ID)
		seen[ev.ID] = true
	}
	require.Len(t, seen, 2*len(names))
}

// Without a URL nobody receives the events: those that waited longer than
// the retention are let go (never pushed, no longer listed as waiting),
// younger ones wait and go out, oldest first, once a URL is set; parked
// events stay for ops; the feed keeps every event.
func TestEventsWithoutAURLAreLetGoAfterTheRetention(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 700)
	ctx := context.Background()
	orders(t, e, sess, "refunded-old", "paid-parked", "closed-young", "paid-young")
	db, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer db.Close()
	// The old order's events have waited four days; the parked one failed
	// for good (when a URL was set) four days ago.
	_, err = db.ExecContext(ctx, `UPDATE order_events SET created_at = created_at - INTERVAL 4 DAY,
		next_at = next_at - INTERVAL 4 DAY WHERE order_no IN (?, ?)`, fmt.Sprintf("%d-refunded-old", sess.ID), fmt.Sprintf("%d-paid-parked", sess.ID))
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `UPDATE order_events SET attempts = 20, next_at = NULL, parked_at = created_at WHERE order_no = ?`,
		fmt.Sprintf("%d-paid-parked", sess.ID))
	require.NoError(t, err)

	r := eventsRelay(e, "", nil)
	r.UnsentRetention = 72 * time.Hour
	_, err = r.Pass(ctx)
	require.NoError(t, err)
	waiting, err := e.DB.EventStates(ctx, 50)
	require.NoError(t, err)
	byOrder := map[string]string{}
	for _, st := range waiting {
		byOrder[strings.TrimPrefix(st.OrderNo, fmt.Sprint(sess.ID))] += string(st.Type) + " " + st.State + ";"
	}
	require.Equal(t, map[string]string{
		"-paid-parked":  "order.created parked;order.paid parked;",
		"-closed-young": "order.created pending;order.closed pending;",
		"-paid-young":   "order.created pending;order.paid pending;",
	}, byOrder, "the old order's three events let go")
	all, _, err := e.DB.Events(ctx, 0, 100)
	require.NoError(t, err)
	require.Len(t, all, 10, "the feed keeps every event")

	rc, srv := newReceiver(t)
	r.URL = srv.URL
	_, err = r.Pass(ctx)
	require.NoError(t, err)
	var took []string
	for _, ev := range rc.taken() {
		took = append(took, strings.TrimPrefix(ev.OrderNo, fmt.Sprint(sess.ID)))
	}
	require.ElementsMatch(t, []string{"-closed-young", "-paid-young"}, took, "a URL set later gets the events younger than the retention (their heads first)")
}
