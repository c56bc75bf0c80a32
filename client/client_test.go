package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/auth"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// requireAnswer checks that err is the API's answer with status and code,
// its trace id the answer's X-Request-ID.
func requireAnswer(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "want an API answer %d %s, got %v", status, code, err)
	require.Equal(t, status, ce.StatusCode, "%v", err)
	require.Equal(t, code, seckill.ErrorCode(err), "%v", err)
	require.Equal(t, status, client.StatusCode(err))
	require.NotEmpty(t, ce.TraceID)
	require.Equal(t, ce.TraceID, ce.RequestID())
	return ce
}

// The whole shopper and admin flow through the client against the real
// API and worker: create, preheat, read, buy (keyed, replayed), poll, pay,
// cancel, sell out, reconcile; and every refusal mapped back to its code.
func TestClientAgainstTheAPI(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	c := e.Client()

	now := time.Now().UTC().Truncate(time.Second)
	sess, err := c.CreateSession(ctx, &seckill.Session{SKUID: 7, Title: "client sale", PriceCents: 250,
		TotalStock: 3, PerUserLimit: 2, StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)})
	require.NoError(t, err)
	require.NotZero(t, sess.ID)
	require.Equal(t, 3, sess.TotalStock)
	require.Equal(t, int64(250), sess.PriceCents)
	require.True(t, sess.StartAt.Equal(now.Add(-time.Second)))
	id := sess.ID

	p, err := c.Preheat(ctx, id, false)
	require.NoError(t, err)
	require.Equal(t, 3, p.Stock)
	p, err = c.Preheat(ctx, id, false) // idempotent
	require.NoError(t, err)
	require.Equal(t, 3, p.Stock)

	got, err := c.Session(ctx, id)
	require.NoError(t, err)
	require.Equal(t, seckill.SessionActive, got.State)
	require.Equal(t, 3, got.RemainingStock)
	list, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, id, list[0].ID)

	// Errors: unknown session, forged token, bad input, wrong admin token.
	_, err = c.Session(ctx, id+1000)
	requireAnswer(t, err, 404, seckill.ENOTFOUND)
	alice := e.Shopper(1)
	_, err = alice.Buy(ctx, id+1000, client.BuyOptions{})
	requireAnswer(t, err, 404, seckill.ENOTFOUND)
	forged, err := auth.IssueToken([]byte("not the secret"), 1, time.Hour, time.Now())
	require.NoError(t, err)
	_, err = c.WithToken(forged).Buy(ctx, id, client.BuyOptions{})
	requireAnswer(t, err, 401, seckill.EUNAUTHORIZED)
	_, err = alice.Buy(ctx, id, client.BuyOptions{Quantity: 3})
	ce := requireAnswer(t, err, 400, seckill.EINVALID)
	require.Contains(t, ce.Err.Message, "quantity")
	_, err = alice.Buy(ctx, id, client.BuyOptions{IdempotencyKey: strings.Repeat("k", 65)})
	requireAnswer(t, err, 400, seckill.EINVALID)
	_, err = c.CreateSession(ctx, &seckill.Session{SKUID: 7, Title: "free", TotalStock: 1, PerUserLimit: 1,
		StartAt: now, EndAt: now.Add(time.Hour)})
	requireAnswer(t, err, 400, seckill.EINVALID)
	bad := *c
	bad.AdminToken = "wrong"
	_, err = bad.Reconcile(ctx, id)
	requireAnswer(t, err, 401, seckill.EUNAUTHORIZED)
	_, err = c.Reconcile(ctx, id+1000)
	requireAnswer(t, err, 404, seckill.ENOTFOUND)

	// A keyed purchase, its replay, and the key reused with another quantity.
	rctx := client.WithRequestID(ctx, "client-test-1")
	first, err := alice.Buy(rctx, id, client.BuyOptions{Quantity: 1, IdempotencyKey: "alice-1"})
	require.NoError(t, err)
	require.Equal(t, seckill.StatusQueued, first.Status)
	require.Equal(t, http.StatusAccepted, first.StatusCode)
	require.Equal(t, "client-test-1", first.RequestID(), "the client's X-Request-ID, echoed")
	require.Equal(t, admission.LayerRedis, first.Layer())
	again, err := alice.Buy(ctx, id, client.BuyOptions{Quantity: 1, IdempotencyKey: "alice-1"})
	require.NoError(t, err)
	require.Equal(t, first.OrderNo, again.OrderNo)
	_, err = alice.Buy(ctx, id, client.BuyOptions{Quantity: 2, IdempotencyKey: "alice-1"})
	requireAnswer(t, err, 422, seckill.EIDEMPOTENCY)

	// Poll, pay, and the paid order can no longer be cancelled.
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	o, err := alice.WaitOrder(waitCtx, first.OrderNo, seckill.StatusWaitPay)
	require.NoError(t, err)
	require.Equal(t, int64(250), o.AmountCents)
	require.Equal(t, int64(1), o.UserID)
	require.False(t, o.PayDeadline.IsZero())
	_, err = e.Shopper(2).Order(ctx, first.OrderNo) // another shopper's order
	requireAnswer(t, err, 404, seckill.ENOTFOUND)
	// A payment of the wrong amount is refused (and refunded: it was captured).
	_, err = c.Pay(ctx, seckill.Payment{PaymentID: "pay-short", OrderNo: first.OrderNo, AmountCents: 249})
	requireAnswer(t, err, 422, seckill.EAMOUNT)
	forger := *c
	forger.WebhookSecret = []byte("forged")
	_, err = forger.Pay(ctx, seckill.Payment{PaymentID: "pay-1", OrderNo: first.OrderNo, AmountCents: 250})
	requireAnswer(t, err, 401, seckill.EUNAUTHORIZED)
	m, err := c.Pay(ctx, seckill.Payment{PaymentID: "pay-1", OrderNo: first.OrderNo, AmountCents: 250})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, m.StatusCode)
	_, err = c.Pay(ctx, seckill.Payment{PaymentID: "pay-1", OrderNo: first.OrderNo, AmountCents: 250}) // replay
	require.NoError(t, err)
	_, err = alice.WaitOrder(waitCtx, first.OrderNo, seckill.StatusPaid)
	require.NoError(t, err)
	_, err = alice.Cancel(ctx, first.OrderNo)
	requireAnswer(t, err, 409, seckill.ECONFLICT)

	// Bob buys two and cancels: the stock comes back.
	bob := e.Shopper(2)
	two, err := bob.Buy(ctx, id, client.BuyOptions{Quantity: 2})
	require.NoError(t, err)
	_, err = bob.WaitOrder(waitCtx, two.OrderNo, seckill.StatusWaitPay)
	require.NoError(t, err)
	_, err = e.Shopper(3).Buy(ctx, id, client.BuyOptions{IdempotencyKey: "carol-1"})
	ce = requireAnswer(t, err, 409, seckill.ESOLDOUT)
	require.Equal(t, admission.LayerRedis, ce.Layer())
	_, err = alice.Buy(ctx, id, client.BuyOptions{}) // the memory fast path now
	ce = requireAnswer(t, err, 409, seckill.ESOLDOUT)
	require.Equal(t, api.LayerSoldOutMemory, ce.Layer())
	cancelled, err := bob.Cancel(ctx, two.OrderNo)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, cancelled.StatusCode)
	_, err = bob.WaitOrder(waitCtx, two.OrderNo, seckill.StatusClosed)
	require.NoError(t, err)
	// Without a key (once every API saw the units back): over the limit.
	// A key that carries no time counts as older than the units that just
	// came back: refused too, and told why (see the README).
	e.Eventually(5*time.Second, "the sold-out flag lifts", func() error {
		_, err := alice.Buy(ctx, id, client.BuyOptions{Quantity: 2})
		if seckill.ErrorCode(err) == seckill.ESOLDOUT {
			return err
		}
		requireAnswer(t, err, 409, seckill.ELIMIT)
		return nil
	})
	_, err = alice.Buy(ctx, id, client.BuyOptions{Quantity: 2, IdempotencyKey: "alice-2"})
	requireAnswer(t, err, 409, seckill.ELIMIT)

	// The typed report agrees with the invariants.
	var rep *seckill.Report
	e.Eventually(20*time.Second, "the cancelled order's stock is back", func() error {
		if rep, err = c.Reconcile(ctx, id); err != nil {
			return err
		}
		if rep.InFlight != 0 || rep.RedisStock != 2 {
			return errors.New("not settled yet")
		}
		return nil
	})
	require.True(t, rep.OK, "%+v", rep)
	require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
	require.Equal(t, 1, rep.Orders[seckill.StatusClosed])
	require.Equal(t, 2, rep.DBStock)
	rep2, repair, err := c.Repair(ctx, id)
	require.NoError(t, err)
	require.True(t, rep2.OK)
	require.NotNil(t, repair)
	e.RequireInvariants(id)
}

// The admin blocklist, purchase tickets, the ops endpoints and the dev-only
// endpoints.
func TestClientAdminAndDev(t *testing.T) {
	e := testenv.New(t, testenv.Options{Dev: true})
	ctx := context.Background()
	c := e.Client()
	require.NoError(t, c.Healthy(ctx))
	require.NoError(t, c.Ready(ctx))

	sess := e.Session(2, 1, 300)
	tok, err := c.DevToken(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, int64(5), tok.UserID)
	shopper := c.WithToken(tok.Token)

	require.NoError(t, c.Block(ctx, 5))
	e.Eventually(5*time.Second, "the block reaches the API", func() error {
		_, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{})
		if code := seckill.ErrorCode(err); code != seckill.EFORBIDDEN {
			return errors.New(code)
		}
		requireAnswer(t, err, 403, seckill.EFORBIDDEN)
		return nil
	})
	require.NoError(t, c.Unblock(ctx, 5))
	var placed *client.Accepted
	e.Eventually(5*time.Second, "the unblock reaches the API", func() error {
		placed, err = shopper.Buy(ctx, sess.ID, client.BuyOptions{IdempotencyKey: "k"})
		return err
	})
	co, err := shopper.Checkout(ctx, placed.OrderNo)
	require.NoError(t, err)
	require.Equal(t, "sandbox", co.Provider)
	code, err := shopper.PaySandbox(ctx, co.CheckoutURL, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = shopper.WaitOrder(wctx, placed.OrderNo, seckill.StatusPaid)
	require.NoError(t, err)

	// A ticket is a 200 with an expiry even for a session without tickets.
	ticket, err := shopper.Ticket(ctx, sess.ID)
	require.NoError(t, err)
	require.NotEmpty(t, ticket.Ticket)
	require.True(t, ticket.ExpiresAt.After(time.Now()))

	text, err := c.Metrics(ctx)
	require.NoError(t, err)
	require.Contains(t, text, "seckill_")
	e.RequireInvariants(sess.ID)
}

// An UNAVAILABLE purchase keeps its Retry-After for the caller's retry.
func TestClientUnavailableKeepsRetryAfter(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, WrapGate: func(g app.APIGate) app.APIGate { return downGate{g} }})
	sess := e.Session(1, 1, 100)
	_, err := e.Shopper(1).Buy(context.Background(), sess.ID, client.BuyOptions{IdempotencyKey: "k"})
	ce := requireAnswer(t, err, 503, seckill.EUNAVAILABLE)
	require.Equal(t, time.Second, ce.RetryAfter())
	e.RequireInvariants(sess.ID)
}

// downGate is a Redis gate whose admission script cannot be reached.
type downGate struct{ app.APIGate }

func (downGate) AdmitAttempt(context.Context, *seckill.Attempt) (*seckill.Admission, error) {
	return nil, seckill.Errorf(seckill.EUNAVAILABLE, "redis is away")
}

// Answers that are not the API's error shape (a proxy's page) still map to
// a code by their status; network failures are not answers.
func TestClientNonAPIAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}))
	c := client.New(srv.URL)
	_, err := c.Session(context.Background(), 1)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))
	require.Equal(t, 502, ce.StatusCode)
	require.Contains(t, string(ce.Body), "bad gateway")
	require.InDelta(t, time.Hour.Seconds(), ce.RetryAfter().Seconds(), 5)
	srv.Close()
	_, err = c.Session(context.Background(), 1)
	require.Error(t, err)
	require.Zero(t, client.StatusCode(err))
	require.Equal(t, seckill.EINTERNAL, seckill.ErrorCode(err))
}

// WaitOrder waits as long as a QUEUED order's answer asks (Retry-After)
// when that is longer than its own interval: in 1.5 s at a 10 ms interval
// it polls at most twice (at 0 and 1 s), not 150 times.
func TestClientWaitOrderHonoursRetryAfter(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"order_no":"1-a","status":"QUEUED","queued":4000}`))
	}))
	defer srv.Close()
	c := client.New(srv.URL)
	c.PollInterval = 10 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := c.WaitOrder(ctx, "1-a", seckill.StatusWaitPay)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.LessOrEqual(t, polls.Load(), int32(2))
}

// A draw sale made through the client: its mode and registration window
// reach the API, shoppers register, and once the session's workflow has
// drawn, the answers carry the winner's right and the waitlisted one's
// position; the winner buys.
func TestClientDrawSale(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	ctx := context.Background()
	c := e.Client()
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Registration opens with the worker's commitment: room for a loaded
	// machine between the two.
	start := now.Add(10 * time.Second)
	sess, err := c.CreateSession(ctx, &seckill.Session{SKUID: 7, Title: "client draw", PriceCents: 250, TotalStock: 1,
		PerUserLimit: 1, StartAt: start, EndAt: start.Add(time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Second), RegisterUntil: start, RightTTLSeconds: 120})
	require.NoError(t, err)
	require.Equal(t, seckill.ModeDraw, sess.Mode)
	require.True(t, sess.RegisterUntil.Equal(start))
	require.Equal(t, 120, sess.RightTTLSeconds)
	require.Len(t, e.WaitCommitted(sess.ID), 64)
	for _, u := range []int64{1, 2} {
		r, err := e.Shopper(u).Register(ctx, sess.ID, 0)
		require.NoError(t, err)
		require.True(t, r.Created)
		require.Equal(t, seckill.RegistrationRegistered, r.Status)
	}

	answers := map[seckill.RegistrationStatus]*client.Registration{}
	var winner int64
	e.Eventually(30*time.Second, "drawn at the start", func() error {
		clear(answers)
		for _, u := range []int64{1, 2} {
			r, err := e.Shopper(u).Registration(ctx, sess.ID)
			if err != nil {
				return err
			}
			if r.Status == seckill.RegistrationWon {
				winner = u
			}
			answers[r.Status] = r
		}
		if len(answers) != 2 || answers[seckill.RegistrationWon] == nil || answers[seckill.RegistrationWaitlisted] == nil {
			return fmt.Errorf("answers %v", answers)
		}
		return nil
	})
	drawn, err := c.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.True(t, answers[seckill.RegistrationWon].RightUntil.Equal(drawn.DrawnAt.Add(2*time.Minute)),
		"right until %s, drawn at %s", answers[seckill.RegistrationWon].RightUntil, drawn.DrawnAt)
	require.Equal(t, 1, answers[seckill.RegistrationWaitlisted].Position)
	for _, r := range answers {
		require.NotNil(t, r.InList, "the list is published: each answer says whether it is in it")
		require.True(t, *r.InList)
	}
	_, err = e.Shopper(3-winner).Buy(ctx, sess.ID, client.BuyOptions{})
	requireAnswer(t, err, 403, seckill.ENOTELIGIBLE)
	placed, err := e.Shopper(winner).Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = e.Shopper(winner).WaitOrder(wctx, placed.OrderNo, seckill.StatusWaitPay)
	require.NoError(t, err)
	e.RequireInvariants(sess.ID)
}
