package shop_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/admission"
	seckillapp "github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
)

// loseFirstAnswer runs every admission for real but answers the first one
// with 503, as when Redis reserved and its reply was lost.
type loseFirstAnswer struct {
	seckillapp.APIGate
	mu   sync.Mutex
	keys []string
}

func (g *loseFirstAnswer) AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error) {
	adm, err := g.APIGate.AdmitAttempt(ctx, a)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keys = append(g.keys, a.IdempotencyKey)
	if len(g.keys) == 1 {
		return nil, seckill.Errorf(seckill.EUNAVAILABLE, "drill: the reply was lost")
	}
	return adm, err
}

// (e) a click whose answer is lost (503) is retried by the page with the
// click's Idempotency-Key: the shopper sees the order the first attempt
// reserved, and there is exactly one.
func TestBrowserBuyRetriesWithItsKey(t *testing.T) {
	lossy := &loseFirstAnswer{}
	e := testenv.New(t, testenv.Options{WrapGate: func(g seckillapp.APIGate) seckillapp.APIGate { lossy.APIGate = g; return lossy }})
	sess := e.Session(3, 1, 100)
	p := openShop(t, e, "/")
	c := card(sess.ID)
	p.do(wait(c + `[data-state="ACTIVE"]`))
	p.pasteToken(11)
	p.do(
		click(c+` button[data-role="buy"]`),
		wait(`#order[data-status="WAIT_PAY"]`),
	)
	no := p.attr("#order", "data-order-no")
	waitOrder(e, 11, no, seckill.StatusWaitPay)
	lossy.mu.Lock()
	keys := append([]string(nil), lossy.keys...)
	lossy.mu.Unlock()
	require.Len(t, keys, 2, "one retry after the 503")
	require.NotEmpty(t, keys[0])
	require.Equal(t, keys[0], keys[1], "the retry carries the click's key")
	at, ok := admission.KeyTime(keys[0])
	require.True(t, ok, "the page's keys are UUIDv7: %s", keys[0])
	require.WithinDuration(t, time.Now(), at, 5*time.Second, "stamped with the server's clock")
	r := e.RequireInvariants(sess.ID)
	require.Equal(t, 2, r.RedisStock, "one unit taken, once")
}
