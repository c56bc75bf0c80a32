package relay_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/relay"
	"github.com/seckill/seckill/temporal/starter"
)

func newRelay(e *testenv.Env) *relay.Relay {
	return &relay.Relay{Gate: e.Gate, Store: e.DB, Starter: e.Orders, PayTimeout: time.Minute, Log: e.Log}
}

// The API died after the admission script and before StartWorkflow: the
// reservation and its pending-start entry are in Redis, no workflow exists.
// The relay starts it (once, whatever the number of passes), and the order
// reaches WAIT_PAY.
func TestRelayStartsWhatTheAPIDidNot(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true})
	sess := e.Session(5, 2, 300)
	ctx := context.Background()
	var lost []string
	for u := int64(1); u <= 3; u++ {
		no := fmt.Sprintf("%d-lost%d-%d", sess.ID, u, time.Now().UnixNano())
		_, _, err := e.Gate.Admit(ctx, sess, u, 1, no, "trace-lost", time.Now()) // the API dies here
		require.NoError(t, err)
		lost = append(lost, no)
	}
	// One of them was started by the API after all, just slowly.
	resv, err := e.Gate.Pending(ctx, sess.ID, time.Now(), 10)
	require.NoError(t, err)
	require.Len(t, resv, 3)
	resv[0].SKUID = sess.SKUID
	started, err := e.Orders.Start(ctx, &seckill.OrderRequest{Reservation: resv[0], PriceCents: 300, PayTimeout: time.Minute})
	require.NoError(t, err)
	require.True(t, started)

	r := newRelay(e)
	r.MinAge = time.Hour
	st, err := r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, relay.Stats{}, st, "fresh entries are left to the API")

	r.MinAge = 0
	st, err = r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, relay.Stats{Started: 2, Existed: 1}, st)
	st, err = r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, relay.Stats{}, st, "nothing left pending")

	for _, no := range lost {
		e.Eventually(20*time.Second, no+" WAIT_PAY", func() error {
			o, err := e.DB.Order(ctx, no)
			if err != nil {
				return err
			}
			if o.Status != seckill.StatusWaitPay {
				return fmt.Errorf("status %s", o.Status)
			}
			return nil
		})
	}
	rep := e.RequireInvariants(sess.ID)
	require.Equal(t, 3, rep.Orders[seckill.StatusWaitPay])
	require.Equal(t, 2, rep.DBStock)
}

// A reservation whose session does not exist can never become an order:
// the relay gives it back.
func TestRelayReleasesOrphans(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true, Temporal: true})
	ctx := context.Background()
	ghost := &seckill.Session{ID: 4242, PerUserLimit: 1}
	_, err := e.Gate.Preheat(ctx, ghost.ID, 3)
	require.NoError(t, err)
	_, _, err = e.Gate.Admit(ctx, ghost, 1, 1, "4242-orphan", "t", time.Now().Add(-time.Minute))
	require.NoError(t, err)
	st, err := newRelay(e).Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, relay.Stats{Released: 1}, st)
	stock, _, err := e.Gate.Stock(ctx, ghost.ID)
	require.NoError(t, err)
	require.Equal(t, 3, stock)
	n, _, err := e.Gate.PendingStats(ctx, ghost.ID)
	require.NoError(t, err)
	require.Zero(t, n)
}

// unreachable is an API's Flow whose workflow starts all time out, as
// when Temporal answers the worker but not this process.
type unreachable struct{ app.APIFlow }

func (unreachable) Start(ctx context.Context, _ *seckill.OrderRequest) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// An API whose starts time out lets go of the orders it holds: the
// worker's relay, which takes only entries older than its minimum age,
// starts them within it, though the API's outbox keeps handing them to
// its starter (whose holds, renewed, kept them young for ever).
func TestStalledAPILeavesItsOrdersToTheRelay(t *testing.T) {
	e := testenv.New(t, testenv.Options{
		WrapFlow: func(f app.APIFlow) app.APIFlow { return unreachable{f} },
		Starter:  starter.Config{CallTimeout: time.Second, HoldEvery: 500 * time.Millisecond},
	})
	sess := e.Session(5, 1, 100)
	r := e.Do("POST", testenv.OrdersPath(sess.ID), e.Token(1), nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	no := r.Str("order_no")

	rl := newRelay(e)
	rl.MinAge = 6 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = rl.Pass(ctx)
			time.Sleep(250 * time.Millisecond)
		}
	}()
	e.WaitStatus(e.Token(1), no, 3*rl.MinAge, seckill.StatusWaitPay)
	e.RequireInvariants(sess.ID)
}
