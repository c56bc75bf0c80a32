package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/internal/testenv"
)

// Reconcile reads each store at one instant, so a sale in motion is never
// reported as a problem: while shoppers buy, pay, cancel (queued and
// waiting orders) and let orders time out, reconcile runs hundreds of
// times and every report is ok. The sale then settles with the invariants.
func TestReconcileIsOKThroughoutASale(t *testing.T) {
	e := testenv.New(t, testenv.Options{PayTimeout: 2 * time.Second})
	sess := e.Session(40, 2, 100)
	ctx := context.Background()

	var calls atomic.Int64
	var mu sync.Mutex
	var bad []string
	stopReconcile := make(chan struct{})
	reconciled := make(chan struct{})
	go func() {
		defer close(reconciled)
		for {
			select {
			case <-stopReconcile:
				return
			default:
			}
			r, err := seckill.Reconcile(ctx, e.DB, e.Gate, sess.ID)
			calls.Add(1)
			if err != nil || !r.OK {
				mu.Lock()
				if len(bad) < 5 {
					bad = append(bad, fmt.Sprintf("err=%v report=%+v", err, r))
				}
				mu.Unlock()
			}
		}
	}()

	var users atomic.Int64
	users.Store(1000)
	var accepted, paid, cancelled atomic.Int64
	deadline := time.Now().Add(6 * time.Second)
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				u := users.Add(1)
				shopper := e.Shopper(u)
				r, err := shopper.Buy(ctx, sess.ID, client.BuyOptions{Quantity: 1 + int(u%2)})
				if err != nil {
					time.Sleep(50 * time.Millisecond) // sold out until timeouts give back
					continue
				}
				n := accepted.Add(1)
				no := r.OrderNo
				pay := seckill.Payment{EventID: "e-" + no, PaymentID: "p-" + no, OrderNo: no, AmountCents: 100 * (1 + u%2)}
				switch n % 5 {
				case 0: // cancel while QUEUED: the workflow takes it after the row exists
					if _, err := shopper.Cancel(ctx, no); err == nil {
						cancelled.Add(1)
					}
				case 1, 2: // pay once it waits for payment
					if waitWaitPay(shopper, no) {
						if _, err := e.Client().Pay(ctx, pay); err == nil {
							paid.Add(1)
						}
					}
				case 3: // cancel while WAIT_PAY
					if waitWaitPay(shopper, no) {
						if _, err := shopper.Cancel(ctx, no); err == nil {
							cancelled.Add(1)
						}
					}
				default: // left to time out
				}
			}
		}()
	}
	wg.Wait()
	// Keep reconciling while the last orders time out and are released.
	e.Eventually(60*time.Second, "the sale settles", func() error {
		r := e.Reconcile(sess.ID)
		if r.InFlight != 0 || r.Orders[seckill.StatusWaitPay] != 0 {
			return fmt.Errorf("in flight %d, waiting %d", r.InFlight, r.Orders[seckill.StatusWaitPay])
		}
		return nil
	})
	for calls.Load() < 300 {
		time.Sleep(10 * time.Millisecond)
	}
	close(stopReconcile)
	<-reconciled
	t.Logf("%d reconciles; %d orders accepted, %d paid, %d cancelled", calls.Load(), accepted.Load(), paid.Load(), cancelled.Load())
	require.Empty(t, bad, "a sale in motion reported as a problem")
	require.Positive(t, paid.Load())
	require.Positive(t, cancelled.Load())
	rep := e.RequireInvariants(sess.ID)
	require.Positive(t, rep.Orders[seckill.StatusClosed])
}

// waitWaitPay polls an order until it waits for payment; false when it
// ends otherwise or does not within 20s (safe in a goroutine, unlike
// Env.WaitStatus).
func waitWaitPay(shopper *client.Client, orderNo string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := shopper.WaitOrder(ctx, orderNo, seckill.StatusWaitPay, seckill.StatusPaid, seckill.StatusClosed,
		seckill.StatusFailed, seckill.StatusRefundPending, seckill.StatusRefunded)
	return err == nil && o.Status == seckill.StatusWaitPay
}
