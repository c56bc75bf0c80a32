package api_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// orderReads counts the API's MySQL order reads.
type orderReads struct {
	app.APIStore
	n atomic.Int64
}

func (s *orderReads) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	s.n.Add(1)
	return s.APIStore.Order(ctx, orderNo)
}

// Polling an order is the hottest read after admission: through QUEUED,
// WAIT_PAY and PAID it is answered from Redis, without one MySQL read.
func TestPollNeedsNoMySQL(t *testing.T) {
	var reads *orderReads
	e := testenv.New(t, testenv.Options{WrapStore: func(s app.APIStore) app.APIStore {
		reads = &orderReads{APIStore: s}
		return reads
	}})
	sess := e.Session(2, 1, 250)
	tok := e.Token(3)
	shopper := e.Client().WithToken(tok)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{})
	require.NoError(t, err)
	no := r.OrderNo
	first, err := shopper.Order(ctx, no)
	require.NoError(t, err)
	require.Contains(t, []seckill.Status{seckill.StatusQueued, seckill.StatusWaitPay}, first.Status)
	require.Equal(t, int64(250), first.AmountCents)
	require.Equal(t, int64(42), first.SKUID)
	w, err := shopper.WaitOrder(ctx, no, seckill.StatusWaitPay)
	require.NoError(t, err)
	require.False(t, w.PayDeadline.IsZero())
	_, err = e.Client().Pay(ctx, seckill.Payment{EventID: "e", PaymentID: "p", OrderNo: no, AmountCents: 250})
	require.NoError(t, err)
	_, err = shopper.WaitOrder(ctx, no, seckill.StatusPaid)
	require.NoError(t, err)
	require.Zero(t, reads.n.Load(), "polls and the webhook's order lookup read MySQL")

	// Another shopper cannot see it; an unknown number is a 404.
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders/"+no, e.Token(4), nil), 404, "NOT_FOUND", "not found")
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders/1-unknown", tok, nil), 404, "NOT_FOUND", "not found")
	testenv.RequireError(t, e.Do("GET", "/api/v1/orders/"+no, "", nil), 401, "UNAUTHENTICATED", "missing")
	e.RequireInvariants(sess.ID)
}
