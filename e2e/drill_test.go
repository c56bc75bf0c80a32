package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/relay"
)

// Drill: a burst whose every workflow start is lost. Each winner still gets
// 202 (the reservation and its pending-start entry are durable), the
// reconcile report shows the relay's backlog, and the relay starts every
// workflow exactly once: all accepted orders reach WAIT_PAY.
func TestDrillLostStartsAreRelayed(t *testing.T) {
	testenv.OnTopologies(t, drillLostStartsAreRelayed)
}

func drillLostStartsAreRelayed(t *testing.T, server string) {
	e := testenv.New(t, testenv.Options{RedisServer: server,
		WrapFlow: testenv.LoseStarts})
	sess := e.Session(10, 1, 100)
	wins, codes := burst(t, e, sess.ID, 100, 30, 2)
	require.Len(t, wins, 10, "%v", codes)
	for _, w := range wins {
		r := e.Do("GET", "/api/v1/orders/"+w.orderNo, w.token, nil)
		require.Equal(t, "QUEUED", r.Str("status"))
	}
	rep := e.Reconcile(sess.ID)
	require.Equal(t, 10, rep.PendingStarts)
	require.Equal(t, 10, rep.InFlight)
	require.True(t, rep.OK, "%v", rep.Problems)

	r := &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: time.Minute, Log: e.Log}
	st, err := r.Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, relay.Stats{Started: 10}, st)
	for _, w := range wins {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	rep = e.RequireInvariants(sess.ID)
	require.Zero(t, rep.PendingStarts)
	require.Equal(t, 10, rep.Orders[seckill.StatusWaitPay])
	require.Equal(t, http.StatusOK, e.Pay(wins[0].orderNo, "p", "e", 100).Status)
	e.WaitStatus(wins[0].token, wins[0].orderNo, 20*time.Second, seckill.StatusPaid)
}

// wipeRedis drops every key of the Env, as a Redis restart without
// persistence would.
func wipeRedis(t *testing.T, e *testenv.Env) {
	t.Helper()
	require.NoError(t, redis.DeletePrefix(context.Background(), e.Redis, e.Prefix))
}

// Drill: Redis restarts empty in the middle of a sale. Reconcile detects
// it, a repair (the forced preheat) rebuilds Redis from MySQL, selling goes
// on without oversell, and the live orders still close and give back
// exactly once.
func TestDrillRedisLosesEverything(t *testing.T) {
	testenv.OnTopologies(t, drillRedisLosesEverything)
}

func drillRedisLosesEverything(t *testing.T, server string) {
	// The unpaid orders must still be open through the wipe and the
	// repair; their deadlines count from the 202s, creation included.
	e := testenv.New(t, testenv.Options{RedisServer: server, PayTimeout: 10 * time.Second})
	sess := e.Session(6, 1, 100)
	wins, _ := burst(t, e, sess.ID, 200, 4, 1)
	require.Len(t, wins, 4)
	for _, w := range wins {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	require.Equal(t, http.StatusOK, e.Pay(wins[0].orderNo, "p-wipe", "e-wipe", 100).Status)
	e.WaitStatus(wins[0].token, wins[0].orderNo, 20*time.Second, seckill.StatusPaid)

	wipeRedis(t, e)
	rep := e.Reconcile(sess.ID)
	require.False(t, rep.Preheated, "reconcile sees Redis lost the session")
	testenv.RequireError(t, e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(900), nil), 503, "UNAVAILABLE", "not preheated")

	fixed, fix, err := e.Client().Repair(context.Background(), sess.ID)
	require.NoError(t, err)
	require.True(t, fixed.OK, "%+v", fixed)
	require.True(t, fix.Repaired, "%+v", fix)
	_, again, err := e.Client().Repair(context.Background(), sess.ID)
	require.NoError(t, err)
	require.False(t, again.Repaired, "nothing left to repair: %+v", again)

	// The three unpaid orders time out and give back; the rebuilt
	// reservations make the Redis release count exactly once.
	for _, w := range wins[1:] {
		e.WaitStatus(w.token, w.orderNo, 30*time.Second, seckill.StatusClosed)
	}
	waitReleased(e, sess.ID)
	// Selling continues: exactly the 5 units left, never more.
	more, codes := burst(t, e, sess.ID, 300, 20, 2)
	require.Len(t, more, 5, "%v", codes)
	for _, w := range more {
		e.WaitStatus(w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	final := e.RequireInvariants(sess.ID)
	require.Zero(t, final.DBStock)
	require.Zero(t, final.RedisStock)
	require.Equal(t, 5, final.Orders[seckill.StatusWaitPay])
}

// waitReleased waits until no reservation is in flight: every closed
// order's Redis release (which follows the CLOSED row) has run.
func waitReleased(e *testenv.Env, sessionID int64) {
	e.T.Helper()
	e.Eventually(10*time.Second, "reservations released", func() error {
		if r := e.Reconcile(sessionID); r.InFlight != 0 {
			return fmt.Errorf("in flight %d", r.InFlight)
		}
		return nil
	})
}

// Out-of-order webhooks: a payment that arrives while the order is still
// QUEUED is buffered by the order's workflow (applied once the row exists),
// also when no workflow runs yet: the webhook's signal-with-start starts it
// (paynow_test.go has the races with the API's start and the relay). It is
// never lost and never applied twice.
func TestDrillPaymentBeforeTheOrderRow(t *testing.T) {
	for _, c := range []struct {
		name string
		o    testenv.Options
	}{
		{"workflow started, row not yet created", testenv.Options{}},
		{"no workflow yet, no relay needed", testenv.Options{WrapFlow: testenv.LoseStarts}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := testenv.New(t, c.o)
			sess := e.Session(2, 1, 100)
			tok := e.Token(1)
			r := e.Do("POST", testenv.OrdersPath(sess.ID), tok, nil)
			require.Equal(t, http.StatusAccepted, r.Status)
			no := r.Str("order_no")
			p := e.Pay(no, "early-"+no, "early-evt-"+no, 100)
			require.Equal(t, http.StatusOK, p.Status, "%s", p.Raw)
			e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
			rep := e.RequireInvariants(sess.ID)
			require.Equal(t, 1, rep.Orders[seckill.StatusPaid])
		})
	}
}
