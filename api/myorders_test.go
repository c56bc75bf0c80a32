package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// A shopper lists their own orders, newest first, a page at a time; nobody
// else's; a bad limit or cursor is refused with what was wrong.
func TestListMyOrders(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(10, 3, 250)
	ctx := context.Background()
	alice, bob := e.Shopper(31), e.Shopper(32)
	var placed []string
	for range 3 {
		a, err := alice.Buy(ctx, sess.ID, client.BuyOptions{})
		require.NoError(t, err)
		e.WaitStatus(e.Token(31), a.OrderNo, 20*time.Second, seckill.StatusWaitPay)
		placed = append(placed, a.OrderNo)
	}
	b, err := bob.Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	e.WaitStatus(e.Token(32), b.OrderNo, 20*time.Second, seckill.StatusWaitPay)

	first, err := alice.Orders(ctx, "", 2)
	require.NoError(t, err)
	require.Len(t, first.Orders, 2)
	require.Equal(t, placed[2], first.Orders[0].OrderNo, "newest first")
	require.Equal(t, placed[1], first.Orders[1].OrderNo)
	require.Equal(t, int64(31), first.Orders[0].UserID)
	require.Equal(t, int64(250), first.Orders[0].AmountCents)
	require.Equal(t, seckill.StatusWaitPay, first.Orders[0].Status)
	require.NotEmpty(t, first.NextCursor)
	rest, err := alice.Orders(ctx, first.NextCursor, 2)
	require.NoError(t, err)
	require.Len(t, rest.Orders, 1)
	require.Equal(t, placed[0], rest.Orders[0].OrderNo)
	require.Empty(t, rest.NextCursor, "the last page")
	all, err := bob.Orders(ctx, "", 0)
	require.NoError(t, err)
	require.Len(t, all.Orders, 1, "only the shopper's own")
	require.Equal(t, b.OrderNo, all.Orders[0].OrderNo)
	none, err := e.Shopper(33).Orders(ctx, "", 0)
	require.NoError(t, err)
	require.Empty(t, none.Orders)

	tok := e.Token(31)
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders", "", nil), 401, "UNAUTHENTICATED", "")
	for q, msg := range map[string]string{
		"?limit=0": "limit", "?limit=101": "limit", "?limit=x": "limit",
		"?cursor=!!": "cursor", "?cursor=bzA": "cursor", "?cursor=" + "eDEy": "cursor",
		"?limits=5": `unknown query parameter "limits"`, "?limit=5&limit=6": `"limit" is given twice`,
	} {
		testenv.RequireError(t, e.Do("GET", "/api/v1/orders"+q, tok, nil), 400, "INVALID_ARGUMENT", msg)
	}
	e.RequireInvariants(sess.ID)
}

// heldFlow holds every workflow start until release is closed: orders stay
// QUEUED, their starts pending.
type heldFlow struct {
	app.APIFlow
	release chan struct{}
}

func (f heldFlow) Start(ctx context.Context, req *seckill.OrderRequest) (bool, error) {
	select {
	case <-f.release:
		return f.APIFlow.Start(ctx, req)
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// heldEnv is a test environment whose workflow starts wait until release
// is closed: the orders bought stay QUEUED until then.
func heldEnv(t *testing.T) (*testenv.Env, chan struct{}) {
	release := make(chan struct{})
	e := testenv.New(t, testenv.Options{WrapFlow: func(f app.APIFlow) app.APIFlow { return heldFlow{APIFlow: f, release: release} }})
	return e, release
}

// buyEach buys one unit of the session for each user from first to last
// and returns their order numbers, in that order.
func buyEach(t *testing.T, e *testenv.Env, sessionID, first, last int64) []string {
	var nos []string
	for u := first; u <= last; u++ {
		a, err := e.Shopper(u).Buy(context.Background(), sessionID, client.BuyOptions{})
		require.NoError(t, err)
		nos = append(nos, a.OrderNo)
	}
	return nos
}

// A long line that goes slowly asks its polls to wait longer: 24 orders
// wait, one start is confirmed a second or more after the first poll
// counted them (a pace under one a second), so the 23 left take over 23 s
// and a quarter of that is the longest wait asked, 5 s.
func TestQueuedOrderPollWaitsForALongLine(t *testing.T) {
	e, release := heldEnv(t)
	sess := e.Session(30, 1, 100)
	ctx := context.Background()
	nos := buyEach(t, e, sess.ID, 1, 24)
	r := e.Do("GET", "/api/v1/orders/"+nos[1], e.Token(2), nil)
	require.Equal(t, "1", r.Header.Get("Retry-After"), "the pace is not known yet")
	time.Sleep(1100 * time.Millisecond)
	require.NoError(t, e.Gate.Started(ctx, sess.ID, nos[0]))
	r = e.Do("GET", "/api/v1/orders/"+nos[1], e.Token(2), nil)
	require.Equal(t, float64(23), r.Body["queued"], "%s", r.Raw)
	require.Equal(t, "5", r.Header.Get("Retry-After"))
	close(release)
	for i, no := range nos {
		e.WaitStatus(e.Token(int64(1+i)), no, 30*time.Second, seckill.StatusWaitPay)
	}
	e.RequireInvariants(sess.ID)
}

// While orders wait for their workflows, a QUEUED order's poll says how
// many of its sale wait to be created, and when to look again (the line's
// pace is not known yet: the shop page's second); once created, it says
// neither.
func TestQueuedOrderSaysTheBacklog(t *testing.T) {
	e, release := heldEnv(t)
	sess := e.Session(5, 1, 100)
	nos := buyEach(t, e, sess.ID, 51, 53)
	for i, no := range nos {
		r := e.Do("GET", "/api/v1/orders/"+no, e.Token(int64(51+i)), nil)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		require.Equal(t, "QUEUED", r.Str("status"))
		require.Equal(t, float64(3), r.Body["queued"], "%s", r.Raw)
		require.Equal(t, "1", r.Header.Get("Retry-After"))
	}
	close(release)
	for i, no := range nos {
		e.WaitStatus(e.Token(int64(51+i)), no, 30*time.Second, seckill.StatusWaitPay)
		r := e.Do("GET", "/api/v1/orders/"+no, e.Token(int64(51+i)), nil)
		require.NotContains(t, r.Body, "queued")
		require.Empty(t, r.Header.Get("Retry-After"))
	}
	e.RequireInvariants(sess.ID)
}
