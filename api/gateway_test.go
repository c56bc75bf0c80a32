package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/temporal/starter"
)

// requireStock asserts the session's Redis stock and that the invariants hold.
func requireStock(t *testing.T, e *testenv.Env, id int64, want int) {
	t.Helper()
	r := e.Reconcile(id)
	require.True(t, r.OK, "%v", r.Problems)
	require.Equal(t, want, r.RedisStock)
}

// Blocked users get 403 before any stock logic; unblocking lets them buy.
func TestBlocklist(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(5, 1, 100)
	tok := e.Token(66)
	testenv.RequireError(t, e.Do("PUT", "/admin/v1/blocklist/66", "", nil), 401, "UNAUTHENTICATED", "operator credential")
	testenv.RequireError(t, e.Do("PUT", "/admin/v1/blocklist/x", testenv.AdminToken, nil), 400, "INVALID_ARGUMENT", "user_id")
	b := e.Do("PUT", "/admin/v1/blocklist/66", testenv.AdminToken, nil)
	require.Equal(t, 200, b.Status, "%s", b.Raw)
	require.Equal(t, true, b.Body["blocked"])
	require.Equal(t, 200, e.Do("PUT", "/admin/v1/blocklist/66", testenv.AdminToken, nil).Status, "idempotent")

	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil), 403, "FORBIDDEN", "may not buy")
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), tok, `{"quantity":1}`), 403, "FORBIDDEN", "may not buy")
	requireStock(t, e, sess.ID, 5)

	require.Equal(t, 200, e.Do("DELETE", "/admin/v1/blocklist/66", testenv.AdminToken, nil).Status)
	r := e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	// The 202 says where its order will be (RFC 9110 §15.3.3).
	require.Equal(t, "/api/v1/orders/"+r.Str("order_no"), r.Header.Get("Location"))
	e.WaitStatus(tok, r.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}

// Rate limits: the per-user and per-IP limits (Redis) answer 429 with
// Retry-After, and a limited request never touches stock.
func TestRateLimits(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{User: 2}})
		sess := e.Session(10, 5, 100)
		tok := e.Token(1)
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil).Status)
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil).Status)
		r := e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil)
		testenv.RequireError(t, r, 429, "RATE_LIMITED", "too many requests")
		require.Equal(t, admission.LayerRateLimit, r.Header.Get(api.HeaderLayer))
		secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
		require.NoError(t, err)
		require.GreaterOrEqual(t, secs, 1)
		// Another user is not affected.
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(2), nil).Status)
		require.Equal(t, 7, e.Reconcile(sess.ID).RedisStock, "the limited request took no stock")
	})
	t.Run("ip", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{IP: 3}})
		sess := e.Session(10, 1, 100)
		for u := int64(1); u <= 3; u++ {
			require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(u), nil).Status)
		}
		testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(4), nil), 429, "RATE_LIMITED", "too many")
		require.Equal(t, 7, e.Reconcile(sess.ID).RedisStock)
	})
	t.Run("global, before auth", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{Global: 2}})
		sess := e.Session(10, 5, 100)
		tok := e.Token(1)
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil).Status)
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil).Status)
		testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), "", nil), 429, "RATE_LIMITED", "too many")
		testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil), 429, "RATE_LIMITED", "too many")
		require.Equal(t, 8, e.Reconcile(sess.ID).RedisStock)
	})
	// Once a sale is sold out its losers are told so, whatever is left of
	// the global budget: a 429 would bring each of them back in a second.
	t.Run("global, after the sold-out memory", func(t *testing.T) {
		e := testenv.New(t, testenv.Options{NoWorker: true, Limits: app.Limits{Global: 2}})
		// Both sales first: the budget refills a token every half second,
		// so the requests below follow each other without a pause.
		sess, other := e.Session(1, 1, 100), e.Session(10, 5, 100)
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(1), nil).Status)
		for u := int64(2); u <= 6; u++ {
			r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(u), nil)
			testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
			require.Equal(t, api.LayerSoldOutMemory, r.Header.Get(api.HeaderLayer))
		}
		// The sold-out answers took nothing from the budget, which
		// another sale's buyers still meet.
		require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(other.ID), e.Token(7), nil).Status)
		testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(other.ID), e.Token(8), nil), 429, "RATE_LIMITED", "too many")
		require.Equal(t, 0, e.Reconcile(sess.ID).RedisStock)
		require.Equal(t, 9, e.Reconcile(other.ID).RedisStock)
	})
}

// With Redis unreachable, admission answers 503 UNAVAILABLE: neither the
// rate limits nor the stock gate are ever skipped; the local limit holds.
func TestRedisDownNeverLetsThrough(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true, Temporal: true})
	sess := e.Session(5, 1, 100)
	dead := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { dead.Close() })
	for _, c := range []struct {
		name   string
		limits app.Limits
	}{{"limits on", app.Limits{Global: 1000, User: 5, IP: 50}}, {"limits off", app.Limits{}}} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := app.NewAPI(app.APIConfig{AdminToken: testenv.AdminToken, Config: api.Config{JWTSecret: testenv.JWTSecret,
				WebhookSecret: testenv.WebhookSecret, Logger: e.Log}, Limits: c.limits, Limiter: redis.NewLimiter(dead, "x")},
				starter.Config{}, e.DB, redis.New(dead, e.Prefix), e.Orders)
			require.NoError(t, err)
			req := httptest.NewRequest("POST", testenv.OrdersPath(sess.ID), nil)
			req.Header.Set("Authorization", "Bearer "+e.Token(1))
			resp, err := srv.App().Test(req, 5000)
			require.NoError(t, err)
			require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		})
	}
	requireStock(t, e, sess.ID, 5)
}

// admitCounter counts the admission scripts the API runs.
type admitCounter struct {
	app.APIGate
	n atomic.Int64
}

func (g *admitCounter) AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	g.n.Add(1)
	return g.APIGate.AdmitAttempt(ctx, a)
}

// Sold-out fast path: once sold out, further orders are refused from
// process memory without Redis; when stock comes back (a cancel), the
// process notices within a second and sells it again.
func TestSoldOutFastPath(t *testing.T) {
	var admits *admitCounter
	e := testenv.New(t, testenv.Options{WrapGate: func(g app.APIGate) app.APIGate {
		admits = &admitCounter{APIGate: g}
		return admits
	}})
	sess := e.Session(2, 1, 100)
	first, second := e.Token(1), e.Token(2)
	a := e.Do("POST", testenv.OrdersPath(sess.ID), first, nil)
	require.Equal(t, http.StatusAccepted, a.Status, "%s", a.Raw)
	require.Equal(t, http.StatusAccepted, e.Do("POST", testenv.OrdersPath(sess.ID), second, nil).Status)
	before := admits.n.Load()
	for u := int64(10); u < 60; u++ {
		r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(u), nil)
		testenv.RequireError(t, r, 409, "SOLD_OUT", "sold out")
		require.Equal(t, api.LayerSoldOutMemory, r.Header.Get(api.HeaderLayer))
	}
	require.Equal(t, before, admits.n.Load(), "sold-out requests must not reach Redis")

	no := a.Str("order_no")
	e.WaitStatus(first, no, 20*time.Second, seckill.StatusWaitPay)
	require.Equal(t, http.StatusAccepted, e.Do("POST", "/api/v1/orders/"+no+"/cancel", first, nil).Status)
	e.WaitStatus(first, no, 20*time.Second, seckill.StatusClosed)
	var resold *testenv.Response
	e.Eventually(5*time.Second, "given-back stock sells again", func() error {
		resold = e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(99), nil)
		if resold.Status != http.StatusAccepted {
			return fmt.Errorf("%d %s", resold.Status, resold.Raw)
		}
		return nil
	})
	e.WaitStatus(e.Token(99), resold.Str("order_no"), 20*time.Second, seckill.StatusWaitPay)
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, 0, r.RedisStock)
}

// Purchase tickets: a session with require_ticket needs a fresh,
// single-use ticket bound to the user and the session.
func TestPurchaseTicket(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true})
	ctx := context.Background()
	admin := e.Client()
	c, err := admin.CreateSession(ctx, &seckill.Session{SKUID: 1, Title: "t", PriceCents: 10, TotalStock: 5,
		PerUserLimit: 2, StartAt: time.Now().Add(-time.Second), EndAt: time.Now().Add(time.Hour), RequireTicket: true})
	require.NoError(t, err)
	require.True(t, c.RequireTicket)
	id := c.ID
	_, err = admin.Preheat(ctx, id, false)
	require.NoError(t, err)
	tok, other := e.Token(1), e.Token(2)
	shopper := admin.WithToken(tok)

	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(id), tok, nil), 403, "FORBIDDEN", "ticket")
	testenv.RequireError(t, e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/ticket", id), "", nil), 401, "UNAUTHENTICATED", "missing")
	tk, err := shopper.Ticket(ctx, id)
	require.NoError(t, err)
	ticket := tk.Ticket
	require.NotEmpty(t, ticket)

	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(id), other, nil, admission.TicketHeader, ticket), 403, "FORBIDDEN", "ticket")
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(id), tok, nil, admission.TicketHeader, ticket+"x"), 403, "FORBIDDEN", "ticket")
	placed, err := shopper.Buy(client.WithRequestID(ctx, "same-id"), id, client.BuyOptions{Ticket: ticket})
	require.NoError(t, err)
	require.Equal(t, "same-id", placed.RequestID(), "the client's X-Request-ID, echoed")
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(id), tok, nil, admission.TicketHeader, ticket), 403, "FORBIDDEN", "already used")
	// The client's own request id does not make a second purchase the
	// "same" one: the ticket stays used.
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(id), tok, nil, admission.TicketHeader, ticket, "X-Request-ID", "same-id"), 403, "FORBIDDEN", "already used")
	require.Equal(t, 4, e.Reconcile(id).RedisStock)
}
