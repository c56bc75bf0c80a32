package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// Bad operator input is refused with what was wrong and changes nothing;
// an unknown session is 404, a missing token 401; a started session cannot
// be edited, an ended one not paused or given stock.
func TestSessionChangesRejectBadInput(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	sess := e.Session(5, 1, 100)
	admin := testenv.AdminToken
	path := fmt.Sprintf("/admin/v1/sessions/%d", sess.ID)

	testenv.RequireError(t, e.Do("POST", path+"/pause", "", nil), 401, "UNAUTHENTICATED", "operator credential")
	testenv.RequireError(t, e.Do("POST", "/admin/v1/sessions/999999/pause", admin, nil), 404, "NOT_FOUND", "999999")
	testenv.RequireError(t, e.Do("POST", path+"/pause", admin, map[string]any{"why": "x"}), 400, "INVALID_ARGUMENT", "unknown field")
	for body, msg := range map[string]string{
		`{}`: `"add" is required`, `{"add":0}`: "between 1", `{"add":-3}`: "between 1", `{"add":"5"}`: `"add" must be`,
		`{"add":1.5}`: `"add" must be`, `{"add":99999999}`: "between 1", `[1]`: "JSON object", `{"add":1} x`: "after the JSON",
	} {
		testenv.RequireError(t, e.Do("POST", path+"/stock", admin, []byte(body)), 400, "INVALID_ARGUMENT", msg)
	}
	testenv.RequireError(t, e.Do("PATCH", path, admin, map[string]any{"price_cents": 5}), 409, "CONFLICT", "has started")
	testenv.RequireError(t, e.Do("PATCH", path, admin, map[string]any{}), 400, "INVALID_ARGUMENT", "nothing to change")
	testenv.RequireError(t, e.Do("PATCH", path, admin, map[string]any{"start_at": "soon"}), 400, "INVALID_ARGUMENT", `"start_at"`)

	// An upcoming session can be edited, within the same rules as a new one.
	ctx := context.Background()
	cl := e.Client()
	later, err := cl.CreateSession(ctx, &seckill.Session{SKUID: 3, Title: "Later", PriceCents: 900, TotalStock: 4,
		PerUserLimit: 1, StartAt: time.Now().Add(time.Hour), EndAt: time.Now().Add(2 * time.Hour)})
	require.NoError(t, err)
	lpath := fmt.Sprintf("/admin/v1/sessions/%d", later.ID)
	testenv.RequireError(t, e.Do("PATCH", lpath, admin, map[string]any{"per_user_limit": 0}), 400, "INVALID_ARGUMENT", "per_user_limit")
	testenv.RequireError(t, e.Do("PATCH", lpath, admin, map[string]any{"end_at": time.Now().Format(time.RFC3339)}), 422, "OUT_OF_RANGE", "end_at must be after")
	title, price := "Later, cheaper", int64(700)
	ch, err := cl.UpdateSession(ctx, later.ID, &seckill.SessionUpdate{Title: &title, PriceCents: &price}, client.ChangeOptions{})
	require.NoError(t, err)
	require.True(t, ch.Applied)
	require.Equal(t, title, ch.Session.Title)
	require.Equal(t, price, ch.Session.PriceCents)
	got, err := cl.Session(ctx, later.ID)
	require.NoError(t, err)
	require.Equal(t, title, got.Title)

	// Ended: no more pause or stock.
	_, err = cl.EndSession(ctx, sess.ID, client.ChangeOptions{})
	require.NoError(t, err)
	_, err = cl.PauseSession(ctx, sess.ID, client.ChangeOptions{})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	_, err = cl.AddStock(ctx, sess.ID, 1, client.ChangeOptions{})
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "%v", err)
	audit, err := cl.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, audit, 1, "refused changes are not in the ledger")
	e.RequireInvariants(sess.ID)
}

// shoppers buy a session without pause until stop is closed, each a new
// user with one unit; the answers are counted by code.
type shoppers struct {
	mu       sync.Mutex
	codes    map[string]int
	accepted map[string]int64 // order number → its shopper
	first    string
	// acceptedSent is when each accepted request was sent: an order
	// admitted while a pause was being committed is answered after it.
	acceptedSent []time.Time
	next         atomic.Int64
	stop         chan struct{}
	wg           sync.WaitGroup
}

func startShoppers(t *testing.T, e *testenv.Env, sessionID int64, n int) *shoppers {
	s := &shoppers{codes: map[string]int{}, accepted: map[string]int64{}, stop: make(chan struct{})}
	s.next.Store(100_000)
	for range n {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				select {
				case <-s.stop:
					return
				default:
				}
				user := s.next.Add(1)
				sent := time.Now()
				a, err := e.Shopper(user).Buy(context.Background(), sessionID, client.BuyOptions{Quantity: 1})
				s.mu.Lock()
				if err == nil {
					s.accepted[a.OrderNo] = user
					s.acceptedSent = append(s.acceptedSent, sent)
					if s.first == "" {
						s.first = a.OrderNo
					}
					s.codes["202"]++
				} else {
					s.codes[seckill.ErrorCode(err)]++
				}
				s.mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(s.halt)
	return s
}

func (s *shoppers) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

// acceptedSentAfter counts the accepted requests sent after t.
func (s *shoppers) acceptedSentAfter(t time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sent := range s.acceptedSent {
		if sent.After(t) {
			n++
		}
	}
	return n
}

func (s *shoppers) count(code string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codes[code]
}

// waitForAnswer waits until the shoppers got code several times more.
func waitForAnswer(e *testenv.Env, s *shoppers, code, what string) {
	before := s.count(code)
	e.Eventually(3*time.Second, what, func() error {
		if s.count(code) <= before+5 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("not yet %s: %v", code, s.codes)
		}
		return nil
	})
}

// The operator's controls under a live burst: pause (423 on the next
// requests, payments go on), resume, add stock after the sell-out (it
// sells again, exactly those units, also when the add is retried), end
// (410); each in the audit ledger with its actor; the invariants hold.
func TestSessionControlsUnderBurst(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(200, 1, 300)
	ctx := context.Background()
	cl := e.Client()
	// Two operators of the sale, each with a named token: the audit says
	// which of them did what.
	ops := map[string]*client.Client{"ops-li": e.Operator("ops-li", seckill.RoleOperator), "ops-wang": e.Operator("ops-wang", seckill.RoleOperator)}
	key := func(id string) client.ChangeOptions { return client.ChangeOptions{RequestID: id} }

	s := startShoppers(t, e, sess.ID, 8)
	e.Eventually(10*time.Second, "the burst sells", func() error {
		if s.count("202") < 20 {
			return errors.New("fewer than 20 sold")
		}
		return nil
	})

	// Pause: from the answer on, nothing is accepted; a payment still lands.
	_, err := ops["ops-li"].PauseSession(ctx, sess.ID, key("pause-1"))
	require.NoError(t, err)
	pausedAt := time.Now()
	waitForAnswer(e, s, seckill.EPAUSED, "orders answer PAUSED")
	require.Zero(t, s.acceptedSentAfter(pausedAt), "accepted a request sent after the pause answered")
	view, err := cl.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, seckill.SessionPaused, view.State)
	s.mu.Lock()
	first, owner := s.first, s.accepted[s.first]
	s.mu.Unlock()
	e.WaitStatus(e.Token(owner), first, 20*time.Second, seckill.StatusWaitPay)
	res := e.Pay(first, "pay-paused", "evt-paused", 300)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	e.WaitStatus(e.Token(owner), first, 20*time.Second, seckill.StatusPaid)

	// Resume: selling goes on to the sell-out.
	_, err = ops["ops-li"].ResumeSession(ctx, sess.ID, key("resume-1"))
	require.NoError(t, err)
	waitForAnswer(e, s, seckill.ESOLDOUT, "sold out after the resume")
	require.Equal(t, 200, s.count("202"))

	// Add 15 units, the second call a retry of the first: sold again,
	// exactly 15.
	added, err := ops["ops-wang"].AddStock(ctx, sess.ID, 15, key("add-1"))
	require.NoError(t, err)
	require.True(t, added.Applied)
	again, err := ops["ops-wang"].AddStock(ctx, sess.ID, 15, key("add-1"))
	require.NoError(t, err)
	require.False(t, again.Applied, "a retried add is applied once")
	require.Equal(t, 215, again.Session.TotalStock)
	e.Eventually(10*time.Second, "the added units sell", func() error {
		if n := s.count("202"); n < 215 {
			return fmt.Errorf("%d sold", n)
		}
		return nil
	})
	waitForAnswer(e, s, seckill.ESOLDOUT, "sold out again")

	// End: 410 from then on.
	_, err = ops["ops-li"].EndSession(ctx, sess.ID, key("end-1"))
	require.NoError(t, err)
	waitForAnswer(e, s, seckill.EENDED, "orders answer ENDED")
	s.halt()
	require.Equal(t, 215, s.count("202"), "exactly the stock and the added units were sold")

	audit, err := cl.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	var got []string
	for _, a := range audit {
		got = append(got, fmt.Sprintf("%s by %s (%s)", a.Action, a.Actor, a.ActorRole))
	}
	require.Equal(t, []string{"pause by ops-li (operator)", "resume by ops-li (operator)", "add_stock by ops-wang (operator)", "end by ops-li (operator)"}, got)
	require.Equal(t, 15, audit[2].Add)
	require.NotEmpty(t, audit[0].From)

	for no, user := range s.accepted { // halted: no more writers
		e.WaitStatus(e.Token(user), no, 30*time.Second, seckill.StatusWaitPay, seckill.StatusPaid)
	}
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, 215, r.TotalStock)
	require.Equal(t, 0, r.DBStock)
}
