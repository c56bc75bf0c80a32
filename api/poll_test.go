package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/api"
	"github.com/seckill/seckill/internal/testenv"
)

// orderReads counts the API's MySQL order reads.
type orderReads struct {
	api.Store
	n atomic.Int64
}

func (s *orderReads) Order(ctx context.Context, orderNo string) (*seckill.Order, error) {
	s.n.Add(1)
	return s.Store.Order(ctx, orderNo)
}

// Polling an order is the hottest read after admission: through QUEUED,
// WAIT_PAY and PAID it is answered from Redis, without one MySQL read.
func TestPollNeedsNoMySQL(t *testing.T) {
	var reads *orderReads
	e := testenv.New(t, testenv.Options{WrapStore: func(s api.Store) api.Store {
		reads = &orderReads{Store: s}
		return reads
	}})
	sess := e.Session(2, 1, 250)
	tok := e.Token(3)
	r := e.Do("POST", fmt.Sprintf("/api/v1/sessions/%d/orders", sess.ID), tok, nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")
	first := e.Do("GET", "/api/v1/orders/"+no, tok, nil)
	require.Equal(t, 200, first.Status)
	require.Contains(t, []string{"QUEUED", "WAIT_PAY"}, first.Str("status"))
	require.Equal(t, float64(250), first.Body["amount_cents"])
	require.Equal(t, float64(42), first.Body["sku_id"])
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusWaitPay)
	w := e.Do("GET", "/api/v1/orders/"+no, tok, nil)
	require.NotNil(t, w.Body["pay_deadline"])
	require.Equal(t, http.StatusOK, e.Pay(no, "p", "e", 250).Status)
	e.WaitStatus(tok, no, 20*time.Second, seckill.StatusPaid)
	require.Zero(t, reads.n.Load(), "polls and the webhook's order lookup read MySQL")

	// Another shopper cannot see it; an unknown number is a 404.
	requireError(t, e.Do("GET", "/api/v1/orders/"+no, e.Token(4), nil), 404, "NOT_FOUND", "not found")
	requireError(t, e.Do("GET", "/api/v1/orders/1-unknown", tok, nil), 404, "NOT_FOUND", "not found")
	requireError(t, e.Do("GET", "/api/v1/orders/"+no, "", nil), 401, "UNAUTHENTICATED", "missing")
	e.RequireInvariants(sess.ID)
}
