package orders_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/orders"
)

// sessions serves one session, as the process's cache would.
type sessions struct{ s *seckill.Session }

func (c sessions) Get(_ context.Context, id int64) (*seckill.Session, error) {
	if id != c.s.ID {
		return nil, seckill.Errorf(seckill.ENOTFOUND, "session %d not found", id)
	}
	return c.s, nil
}

// A QUEUED order (reserved in Redis, no row yet) is found for its owner
// and for any owner (0: an operator, the payment intake) with what its
// view lacks filled in from its session: the SKU, the amount and the
// deadline counted from the reservation. Another shopper, a number that
// cannot be ours and an unknown one are NOT_FOUND.
func TestFindFillsInAQueuedOrder(t *testing.T) {
	testenv.SkipShort(t, "MariaDB and Redis")
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(3, 2, 250)
	ctx := context.Background()
	a := &seckill.Attempt{Session: sess, UserID: 7, Quantity: 2, TraceID: "t", Now: time.Now(),
		OrderNo: seckill.NewOrderNo(sess.ID), Fingerprint: "2"}
	adm, err := e.Gate.AdmitAttempt(ctx, a)
	require.NoError(t, err)
	f := orders.New(e.Gate, e.DB, sessions{sess}, time.Minute)

	for _, owner := range []int64{7, 0} {
		o, err := f.Find(ctx, adm.OrderNo, owner)
		require.NoError(t, err)
		require.Equal(t, seckill.StatusQueued, o.Status)
		require.Equal(t, sess.SKUID, o.SKUID)
		require.Equal(t, 2*sess.PriceCents, o.AmountCents)
		require.Equal(t, o.CreatedAt.Add(time.Minute), o.PayDeadline)
	}
	for _, no := range []string{adm.OrderNo, "abc", strconv.FormatInt(sess.ID, 10) + "-00000000000000000000000000000001"} {
		_, err := f.Find(ctx, no, 8)
		require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), no)
	}
	r := e.Reconcile(sess.ID)
	require.True(t, r.OK, "%+v", r)
	require.Equal(t, r.TotalStock, r.RedisStock+r.ReservedQty)
}
