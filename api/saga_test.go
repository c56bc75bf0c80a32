package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
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
		for i := 0; i < tries; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sessionID), tok, map[string]int{"quantity": 1})
				mu.Lock()
				defer mu.Unlock()
				if r.Status == http.StatusAccepted {
					require.Equal(t, "QUEUED", r.Str("status"))
					wins = append(wins, accepted{user: u, token: tok, orderNo: r.Str("order_no")})
				} else {
					codes[fmt.Sprintf("%d %s", r.Status, r.Str("code"))]++
				}
			}()
		}
	}
	close(gate)
	wg.Wait()
	return wins, codes
}

// TestBurstPayTimeoutAndResell is the saga end to end on the real services:
// far more requests than stock, each user racing themself, exactly the
// stock accepted; part paid through signed webhooks, the rest timed out
// with their stock given back in MySQL and Redis; then the given-back
// stock sells again.
func TestBurstPayTimeoutAndResell(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 6 * time.Second})
	const stock, limit = 24, 2
	sess := e.Session(stock, limit, 1500)

	wins, codes := burst(t, e, sess.ID, 1000, 60, 3) // 180 requests for 24 units
	require.Len(t, wins, stock, "accepted exactly the stock; refusals: %v", codes)
	require.Equal(t, 180-stock, codes["409 SOLD_OUT"]+codes["409 LIMIT_EXCEEDED"], "every loser is SOLD_OUT or LIMIT_EXCEEDED: %v", codes)
	perUser := map[int64]int{}
	for _, w := range wins {
		perUser[w.user]++
		require.LessOrEqual(t, perUser[w.user], limit, "user %d over the limit", w.user)
	}

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
	replay := e.Pay(paid[0].orderNo, "pay-0", "evt-0", 1500)
	require.Equal(t, http.StatusOK, replay.Status, "%s", replay.Raw)
	require.Equal(t, true, replay.Body["received"])
	for _, w := range paid {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusPaid)
	}
	// The rest time out, and their stock comes back.
	for _, w := range wins[stock/2:] {
		e.WaitStatus(w.token, w.orderNo, 30*time.Second, seckill.StatusClosed)
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
	owner, other := e.Token(1), e.Token(2)

	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), owner, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	e.WaitStatus(owner, no, 20*time.Second, seckill.StatusWaitPay)

	require.Equal(t, http.StatusNotFound, e.Do("GET", "/api/v1/orders/"+no, other, nil).Status)
	require.Equal(t, http.StatusNotFound, e.Do("POST", "/api/v1/orders/"+no+"/cancel", other, nil).Status)

	c := e.Do("POST", "/api/v1/orders/"+no+"/cancel", owner, nil)
	require.Equal(t, http.StatusAccepted, c.Status, "%s", c.Raw)
	require.Equal(t, no, c.Str("order_no"))
	e.WaitStatus(owner, no, 20*time.Second, seckill.StatusClosed)
	e.Eventually(10*time.Second, "stock back", func() error {
		if s, _, _ := e.Gate.Stock(context.Background(), sess.ID); s != 3 {
			return fmt.Errorf("redis stock %d", s)
		}
		return nil
	})
	again := e.Do("POST", "/api/v1/orders/"+no+"/cancel", owner, nil)
	require.Equal(t, http.StatusConflict, again.Status, "%s", again.Raw)
	require.Equal(t, "CONFLICT", again.Str("code"))

	// The limit came back with the stock: the owner may buy again, and pay.
	r = e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), owner, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no2 := r.Str("order_no")
	e.WaitStatus(owner, no2, 20*time.Second, seckill.StatusWaitPay)
	require.Equal(t, http.StatusOK, e.Pay(no2, "p-1", "e-1", 700).Status)
	e.WaitStatus(owner, no2, 20*time.Second, seckill.StatusPaid)
	paidCancel := e.Do("POST", "/api/v1/orders/"+no2+"/cancel", owner, nil)
	require.Equal(t, http.StatusConflict, paidCancel.Status)
	e.RequireInvariants(sess.ID)
}
