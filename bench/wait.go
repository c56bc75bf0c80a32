package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill"
)

// pollEvery is how often the bench polls an order's status: the shop
// page's pace while an order is about to change (POLL_FAST in
// shop/static/app.js). When an order got there is read from the order
// itself (its row's times, see changedAt), not from the poll, so polling
// as a shopper does costs no precision, and polling faster would take CPU
// from the stack being measured (docs/BENCHMARKS.md).
const pollEvery = time.Second

// seen is when an order got a wanted status, and how it was first seen so.
type seen struct {
	at    time.Time
	order *seckill.Order
}

// firstOf is the earliest time in a set of orders seen (zero for none).
func firstOf(s map[string]seen) time.Time {
	var first time.Time
	for _, x := range s {
		if first.IsZero() || x.at.Before(first) {
			first = x.at
		}
	}
	return first
}

// lastOf is the latest time in a set of orders seen.
func lastOf(s map[string]seen) time.Time {
	var last time.Time
	for _, x := range s {
		if x.at.After(last) {
			last = x.at
		}
	}
	return last
}

// createdAt is when an order's row was created: when it became payable
// and left QUEUED, whatever it has become since.
func createdAt(o *seckill.Order) time.Time { return o.CreatedAt }

// changedAt is when an order's row last changed: when it took the
// (final) status it shows.
func changedAt(o *seckill.Order) time.Time { return o.UpdatedAt }

// waitCreated waits for the orders' creation (WAIT_PAY, or PAID or
// CLOSED since) as waitAll does, calling reached (if any) for each, for as
// long as the order tier goes on creating them: it gives up only once no
// order got there for Settle. A sale's thousands of winners are created
// at the order tier's pace (a few dozen a second on a small machine), far
// longer than any one order should take.
func (r *stepRunner) waitCreated(ctx context.Context, won []result, reached func(result)) (map[string]seen, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := time.AfterFunc(r.cfg.Settle, cancel)
	defer idle.Stop()
	return r.waitAll(wctx, won, followAtMost, func(x result) {
		idle.Reset(r.cfg.Settle)
		if reached != nil {
			reached(x)
		}
	}, createdAt, seckill.StatusWaitPay, seckill.StatusPaid, seckill.StatusClosed)
}

// followAtMost bounds waitCreated however steadily orders come.
const followAtMost = time.Hour

// waitAll polls the orders (every pollEvery, as their shoppers) until each
// has one of want (or the timeout), calls reached (if any) for each as it
// gets there, and returns when each got there: at(order) from the view
// (the row's times, by the stack's clock: run the bench on a host whose
// clock agrees with the stack's), or when it was first seen so if the
// view does not say (an API from before updated_at). missed is the first
// order that did not get there, with what its polls last saw (nil when
// every one did): the problem a caller reports says why, not only how many.
func (r *stepRunner) waitAll(ctx context.Context, orders []result, timeout time.Duration, reached func(result),
	at func(*seckill.Order) time.Time, want ...seckill.Status) (got map[string]seen, missed error) {
	var mu sync.Mutex
	var first *result
	var firstErr error
	got = map[string]seen{}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.parallel(orders, func(x result) {
		o, err := r.shoppers[x.shopper].api.WaitOrder(wctx, x.orderNo, want...)
		if err != nil {
			// The timeout: the caller counts who never got there.
			mu.Lock()
			if first == nil {
				first, firstErr = &x, err
			}
			mu.Unlock()
			return
		}
		when := at(o)
		if when.IsZero() {
			when = time.Now()
		}
		mu.Lock()
		got[x.orderNo] = seen{at: when, order: o}
		mu.Unlock()
		if reached != nil {
			reached(x)
		}
	})
	if first != nil {
		missed = r.missedOrder(ctx, *first, firstErr)
	}
	return got, missed
}

// missedOrder says why x's polls never saw it get there: what they last
// saw (err), the purchase's request, and the order as an operator finds
// it (whose it is, and which request made it).
func (r *stepRunner) missedOrder(ctx context.Context, x result, err error) error {
	err = fmt.Errorf("shopper %d's %w; the purchase was request %s", r.shoppers[x.shopper].user, err, x.requestID)
	if r.api == nil {
		return err
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rec, lerr := r.api.OrderRecord(lctx, x.orderNo)
	if lerr != nil {
		return fmt.Errorf("%w; as an operator finds it: %v", err, lerr)
	}
	return fmt.Errorf("%w; as an operator finds it: user %d's, %s, made by request %s", err, rec.UserID, rec.Status, rec.TraceID)
}

// parallel runs f over xs with a bounded number of goroutines.
func (r *stepRunner) parallel(xs []result, f func(result)) {
	ch := make(chan result)
	var wg sync.WaitGroup
	for w := 0; w < min(64, len(xs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range ch {
				f(x)
			}
		}()
	}
	for _, x := range xs {
		ch <- x
	}
	close(ch)
	wg.Wait()
}
