package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

type accepted struct {
	user    int64
	token   string
	orderNo string
}

// burst sends tries concurrent orders (quantity 1) for each of users
// shoppers, each shopper's requests racing each other, and returns the
// accepted ones and the count of each refusal code.
func burst(t *testing.T, e *testenv.Env, sessionID int64, firstUser int64, users, tries int) ([]accepted, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	var wins []accepted
	codes := map[string]int{}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for u := firstUser; u < firstUser+int64(users); u++ {
		tok := e.Token(u)
		shopper := e.Client().WithToken(tok)
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				a, err := shopper.Buy(context.Background(), sessionID, client.BuyOptions{Quantity: 1})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					assert.Equal(t, seckill.StatusQueued, a.Status)
					wins = append(wins, accepted{user: u, token: tok, orderNo: a.OrderNo})
				} else {
					codes[fmt.Sprintf("%d %s", client.StatusCode(err), seckill.ErrorCode(err))]++
				}
			}()
		}
	}
	close(gate)
	wg.Wait()
	return wins, codes
}

// sellOut is a burst (see burst) that must sell exactly the session's
// stock, no shopper over the per-user limit.
func sellOut(t *testing.T, e *testenv.Env, sess *seckill.Session, firstUser int64, users, tries int) ([]accepted, map[string]int) {
	t.Helper()
	wins, codes := burst(t, e, sess.ID, firstUser, users, tries)
	require.Len(t, wins, sess.TotalStock, "accepted exactly the stock; refusals: %v", codes)
	perUser := map[int64]int{}
	for _, w := range wins {
		perUser[w.user]++
		require.LessOrEqual(t, perUser[w.user], sess.PerUserLimit, "user %d over the limit", w.user)
	}
	return wins, codes
}

// TestBurstPayTimeoutAndResell is the saga end to end on the real services:
// far more requests than stock, each user racing themself, exactly the
// stock accepted; part paid through signed webhooks, the rest timed out
// with their stock given back in MySQL and Redis; then the given-back
// stock sells again.
func TestBurstPayTimeoutAndResell(t *testing.T) {
	// The pay timeout is the margin every check of an open order has: the
	// test looks at all 24 orders while they are WAIT_PAY, and later at the
	// resold ones, before their deadlines close them. The deadline counts
	// from the 202, so the margin must also cover the waves of the resale
	// and each order's creation on a CI box busy with the other packages'
	// own Temporal servers: 6 s, then 15 s, were too little there (an order
	// closed before the test polled it). Waiting 30 s for the timeouts is
	// the price of a check that does not depend on the machine's speed.
	e := testenv.New(t, testenv.Options{PayTimeout: 30 * time.Second})
	const stock, limit = 24, 2
	sess := e.Session(stock, limit, 1500)

	wins, codes := sellOut(t, e, sess, 1000, 60, 3) // 180 requests for 24 units
	require.Equal(t, 180-stock, codes["409 SOLD_OUT"]+codes["409 LIMIT_EXCEEDED"], "every loser is SOLD_OUT or LIMIT_EXCEEDED: %v", codes)

	// Every accepted order reaches WAIT_PAY exactly once.
	for _, w := range wins {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	r := e.Reconcile(sess.ID)
	require.True(t, r.OK, "%v", r.Problems)
	require.Equal(t, 0, r.DBStock)
	require.Equal(t, stock, r.Orders[seckill.StatusWaitPay])

	// Pay the first half; replay one webhook, which must change nothing.
	paid := wins[:stock/2]
	for i, w := range paid {
		res := e.Pay(w.orderNo, fmt.Sprintf("pay-%d", i), fmt.Sprintf("evt-%d", i), 1500)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	}
	replay, err := e.Client().Pay(context.Background(), seckill.Payment{EventID: "evt-0", PaymentID: "pay-0", OrderNo: paid[0].orderNo, AmountCents: 1500})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, replay.StatusCode)
	for _, w := range paid {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusPaid)
	}
	// The rest time out, and their stock comes back.
	for _, w := range wins[stock/2:] {
		e.WaitStatus(w.token, w.orderNo, 60*time.Second, seckill.StatusClosed)
	}
	waitReleased(e, sess.ID)
	r = e.RequireInvariants(sess.ID)
	require.Equal(t, stock/2, r.DBStock)
	require.Equal(t, stock/2, r.RedisStock)
	require.Equal(t, stock/2, r.Orders[seckill.StatusPaid])
	require.Equal(t, stock/2, r.Orders[seckill.StatusClosed])

	// Given-back stock sells again, to new shoppers, exactly. The API may
	// still hold its sold-out flag for up to a recheck period after the
	// release (the contract is "within a second"), so shoppers keep coming
	// in waves until it lifts; however many waves it takes, exactly the
	// given-back stock is sold.
	var again []accepted
	waves := int64(0)
	e.Eventually(5*time.Second, "given-back stock sells again", func() error {
		waves++
		wave, codes := burst(t, e, sess.ID, 5000+waves*100, 40, 2)
		again = append(again, wave...)
		if len(again) < stock/2 {
			return fmt.Errorf("resold %d of %d; refusals: %v", len(again), stock/2, codes)
		}
		return nil
	})
	require.Len(t, again, stock/2, "resold exactly the given-back stock")
	for _, w := range again {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	r = e.RequireInvariants(sess.ID)
	require.Equal(t, 0, r.DBStock)
	require.Equal(t, 0, r.RedisStock)
}

// TestCancelGivesStockBack: the owner cancels an unpaid order; nobody else
// can see or cancel it; a paid order cannot be cancelled.
func TestCancelGivesStockBack(t *testing.T) {
	e := testenv.New(t, testenv.Options{})
	sess := e.Session(3, 1, 700)
	owner, other := e.Shopper(1), e.Shopper(2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	r, err := owner.Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	no := r.OrderNo
	_, err = owner.WaitOrder(ctx, no, seckill.StatusWaitPay)
	require.NoError(t, err)

	_, err = other.Order(ctx, no)
	require.Equal(t, http.StatusNotFound, client.StatusCode(err))
	_, err = other.Cancel(ctx, no)
	require.Equal(t, http.StatusNotFound, client.StatusCode(err))

	c, err := owner.Cancel(ctx, no)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, c.StatusCode)
	require.Equal(t, no, c.OrderNo)
	_, err = owner.WaitOrder(ctx, no, seckill.StatusClosed)
	require.NoError(t, err)
	e.Eventually(10*time.Second, "stock back", func() error {
		if s, _, _ := e.Gate.Stock(context.Background(), sess.ID); s != 3 {
			return fmt.Errorf("redis stock %d", s)
		}
		return nil
	})
	_, err = owner.Cancel(ctx, no)
	require.Equal(t, http.StatusConflict, client.StatusCode(err), "%v", err)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))

	// The limit came back with the stock: the owner may buy again, and pay.
	r, err = owner.Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	no2 := r.OrderNo
	_, err = owner.WaitOrder(ctx, no2, seckill.StatusWaitPay)
	require.NoError(t, err)
	_, err = e.Client().Pay(ctx, seckill.Payment{EventID: "e-1", PaymentID: "p-1", OrderNo: no2, AmountCents: 700})
	require.NoError(t, err)
	_, err = owner.WaitOrder(ctx, no2, seckill.StatusPaid)
	require.NoError(t, err)
	_, err = owner.Cancel(ctx, no2)
	require.Equal(t, http.StatusConflict, client.StatusCode(err))
	e.RequireInvariants(sess.ID)
}
