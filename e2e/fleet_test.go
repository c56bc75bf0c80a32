package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/seckill/seckill"
	seckillclient "github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/workflows"
)

// fleet is the production topology on one machine: two API processes
// behind HAProxy (deploy/haproxy/haproxy.cfg, as `make stack` runs it) and
// two worker processes, on one MySQL, Redis and Temporal.
type fleet struct {
	e       *testenv.Env
	apis    [2]*testenv.Process
	bases   [2]string
	workers [2]*testenv.Process
	lb      *testenv.Balancer
}

func startFleet(t *testing.T) *fleet {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true, Temporal: true})
	f := &fleet{e: e}
	for i := range f.workers {
		// Both workers keep the reconcile schedule and run a relay: the
		// test checks they never act twice.
		f.workers[i] = e.Spawn(e.ProcessEnv("SECKILL_RECONCILE_EVERY=2s", "SECKILL_RELAY_MIN_AGE=2s"), "worker")
	}
	for i := range f.apis {
		f.apis[i], f.bases[i] = e.SpawnAPI(e.ProcessEnv("SECKILL_PROXY_HEADER=X-Forwarded-For", "SECKILL_TRUSTED_PROXIES=127.0.0.1/32"))
	}
	f.lb = testenv.StartBalancer(t, strings.TrimPrefix(f.bases[0], "http://"), strings.TrimPrefix(f.bases[1], "http://"))
	e.BaseURL = f.lb.URL()
	return f
}

// buyUntilAnswered is a shopper who keeps one Idempotency-Key and tries
// again until the API answers for sure: accepted, or refused with a
// definite code. A lost answer (a killed API, 502/503 from the balancer,
// UNAVAILABLE) may hide an admission; only the same key may tell.
func buyUntilAnswered(ctx context.Context, shopper *seckillclient.Client, sessionID int64, key string, retries *atomic.Int64) (string, error) {
	for {
		a, err := shopper.Buy(ctx, sessionID, seckillclient.BuyOptions{Quantity: 1, IdempotencyKey: key})
		if err == nil {
			return a.OrderNo, nil
		}
		switch code := seckill.ErrorCode(err); {
		case code == seckill.ESOLDOUT || code == seckill.ELIMIT:
			return "", err
		case ctx.Err() != nil:
			return "", fmt.Errorf("no answer for key %s: %w", key, err)
		}
		retries.Add(1)
		time.Sleep(50 * time.Millisecond)
	}
}

// sell runs users shoppers through the balancer at once; onAccept is called
// after each acceptance with the number so far.
func (f *fleet) sell(t *testing.T, sessionID, firstUser int64, users int, onAccept func(int64)) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu       sync.Mutex
		orders   = map[string]int64{} // order number → its shopper
		accepted atomic.Int64
		retries  atomic.Int64
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for u := firstUser; u < firstUser+int64(users); u++ {
		shopper := f.e.Shopper(u)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			no, err := buyUntilAnswered(ctx, shopper, sessionID, fmt.Sprintf("fleet-%d-%d", sessionID, u), &retries)
			if err != nil {
				if c := seckill.ErrorCode(err); c != seckill.ESOLDOUT && c != seckill.ELIMIT {
					t.Errorf("user %d: %v", u, err)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if _, dup := orders[no]; dup {
				t.Errorf("order %s handed out twice", no)
			}
			orders[no] = u
			if onAccept != nil {
				onAccept(accepted.Add(1))
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("session %d: %d accepted, %d answers lost and retried with the same key", sessionID, len(orders), retries.Load())
	return orders
}

// soldOutFromMemory asks one API directly until it refuses from its own
// sold-out flag, without a Redis round trip.
func soldOutFromMemory(e *testenv.Env, base string, sessionID, user int64) error {
	c := e.Shopper(user)
	c.BaseURL = base
	_, err := c.Buy(context.Background(), sessionID, seckillclient.BuyOptions{Quantity: 1})
	var ae *seckillclient.Error
	if !errors.As(err, &ae) || seckill.ErrorCode(err) != seckill.ESOLDOUT {
		return fmt.Errorf("%s: not SOLD_OUT: %v", base, err)
	}
	if layer := ae.Meta.Header.Get(seckillclient.HeaderLayer); layer != "soldout_memory" {
		return fmt.Errorf("%s: SOLD_OUT from layer %q, not yet from memory", base, layer)
	}
	return nil
}

// TestFleetBehindTheBalancer sells through HAProxy to two APIs and two
// workers: exact stock; both APIs learn a sale is sold out, and paused (an
// operator's change through one API holds on both); one API killed
// mid-burst loses no accepted order (the balancer routes around it, the
// shoppers' retries with their keys find their orders); one worker killed,
// the other carries on; the relays and the reconcile schedule never act
// twice; the invariants at the end.
func TestFleetBehindTheBalancer(t *testing.T) {
	f := startFleet(t)
	e := f.e

	// Both APIs up: exact stock, and the sold-out flag on both.
	first := e.Session(20, 1, 900)
	sold := f.sell(t, first.ID, 1000, 200, nil)
	require.Len(t, sold, 20)
	for i, base := range f.bases {
		e.Eventually(3*time.Second, "sold-out flag on API "+fmt.Sprint(i+1), func() error {
			return soldOutFromMemory(e, base, first.ID, 5000+int64(i))
		})
	}

	// An operator's pause, made through one API, holds on both.
	_, err := e.Client().PauseSession(context.Background(), first.ID, seckillclient.ChangeOptions{})
	require.NoError(t, err)
	for i, base := range f.bases {
		e.Eventually(3*time.Second, "pause on API "+fmt.Sprint(i+1), func() error {
			c := e.Shopper(6000 + int64(i))
			c.BaseURL = base
			_, err := c.Buy(context.Background(), first.ID, seckillclient.BuyOptions{Quantity: 1})
			if seckill.ErrorCode(err) != seckill.EPAUSED {
				return fmt.Errorf("%s: not PAUSED: %v", base, err)
			}
			return nil
		})
	}

	// API 1 killed mid-burst; worker 1 killed once the burst is over.
	second := e.Session(60, 1, 900)
	var kill sync.Once
	orders := f.sell(t, second.ID, 10000, 300, func(n int64) {
		if n == 15 {
			kill.Do(func() { go f.apis[0].Kill() })
		}
	})
	require.Len(t, orders, 60, "exactly the stock accepted, none lost with the killed API")
	f.workers[0].Kill()

	// Every accepted order of both sales becomes payable, polled through
	// the balancer (now one API, one worker); every tenth is paid.
	i := 0
	for _, set := range []map[string]int64{sold, orders} {
		for no, user := range set {
			e.WaitStatus(e.Token(user), no, 60*time.Second, seckill.StatusWaitPay)
			if i%10 == 0 {
				res := e.Pay(no, "pay-"+no, "evt-"+no, 900)
				require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
				e.WaitStatus(e.Token(user), no, 30*time.Second, seckill.StatusPaid)
			}
			i++
		}
	}

	// One workflow run per order, whoever started it (an API's starter, its
	// outbox relay, a worker's relay), and one reconcile schedule for the
	// two workers.
	e.Eventually(10*time.Second, "one order workflow per accepted order", func() error {
		n, err := e.Temporal.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND TaskQueue = '%s'", workflows.OrderWorkflowName, e.TaskQueue)})
		if err != nil {
			return err
		}
		if n.Count != int64(len(sold)+len(orders)) {
			return fmt.Errorf("%d order workflows for %d orders", n.Count, len(sold)+len(orders))
		}
		return nil
	})
	var schedules int
	list, err := e.Temporal.ScheduleClient().List(context.Background(), client.ScheduleListOptions{})
	require.NoError(t, err)
	for list.HasNext() {
		s, err := list.Next()
		require.NoError(t, err)
		if strings.HasSuffix(s.ID, e.TaskQueue) {
			schedules++
		}
	}
	require.Equal(t, 1, schedules, "one reconcile schedule for two workers")

	e.RequireInvariants(first.ID)
	e.RequireInvariants(second.ID)
}
