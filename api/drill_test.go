package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
)

// deadStarts is the test seam for "the API dies after the Lua script and
// before StartWorkflow": every start is lost.
type deadStarts struct{ api.Flow }

func (deadStarts) Start(context.Context, *seckill.OrderRequest) (bool, error) {
	return false, errors.New("drill: the API process died before StartWorkflow")
}

// Drill: a burst whose every workflow start is lost. Each winner still gets
// 202 (the reservation and its pending-start entry are durable), the
// reconcile report shows the relay's backlog, and the relay starts every
// workflow exactly once: all accepted orders reach WAIT_PAY.
func TestDrillLostStartsAreRelayed(t *testing.T) {
	e := testenv.New(t, testenv.Options{StartTimeout: 50 * time.Millisecond,
		WrapFlow: func(f api.Flow) api.Flow { return deadStarts{f} }})
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
		waitStatus(e, w.token, w.orderNo, 20*time.Second, seckill.StatusWaitPay)
	}
	rep = e.RequireInvariants(sess.ID)
	require.Zero(t, rep.PendingStarts)
	require.Equal(t, 10, rep.Orders[seckill.StatusWaitPay])
	require.Equal(t, http.StatusOK, e.Pay(wins[0].orderNo, "p", "e", 100).Status)
	waitStatus(e, wins[0].token, wins[0].orderNo, 20*time.Second, seckill.StatusPaid)
}
