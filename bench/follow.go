package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/sandbox"
	"github.com/seckill/seckill/temporal"
)

// follow tracks every accepted order to WAIT_PAY, pays PayRatio of them
// through signed webhooks and waits for the rest to time out. created (nil:
// nothing) runs once every order is created and the creation measured,
// before the payments are awaited.
func (r *stepRunner) follow(ctx context.Context, won []result, created func() error) error {
	if created == nil {
		created = func() error { return nil }
	}
	if len(won) == 0 {
		return created()
	}
	f := &r.step.Funnel
	nPay := int(float64(len(won)) * r.cfg.PayRatio)
	pay, rest := won[:nPay], won[nPay:]
	toPay := map[string]bool{}
	for _, x := range pay {
		toPay[x.orderNo] = true
	}
	// A shopper pays as soon as the order shows WAIT_PAY, as on a real
	// sale: paying only once every order is created would race the pay
	// timeout of the first ones. With PayAfterCreation the payments wait
	// for the last order instead, so that the creation, the payments and
	// the closes are each measured alone.
	payNow := func(x result) {
		if toPay[x.orderNo] {
			r.pay(ctx, x)
		}
	}
	if r.cfg.PayAfterCreation {
		payNow = nil
	}
	reached, missed := r.waitCreated(ctx, won, payNow)
	last := lastOf(reached)
	f.OrdersCreated = len(reached)
	burstEnd := r.start.Add(time.Duration(r.step.DurationSeconds * float64(time.Second)))
	for _, x := range reached {
		if x.at.Before(burstEnd) {
			r.step.CreatedDuringBurst++
		}
	}
	var spent TemporalCPU
	if p := r.cpu.phase(r.creating); p.serverSeconds > 0 {
		spent.CreateShare = p.share
		if payNow == nil || nPay == 0 {
			spent.CreateMs = p.msPer(len(reached))
		} else {
			spent.CreateAndPayMs = p.msPer(len(reached))
		}
	}
	if f.OrdersCreated < len(won) {
		r.problem("%d accepted orders never reached WAIT_PAY: none did in the last %s (%v)", len(won)-f.OrdersCreated, r.cfg.Settle, missed)
	} else {
		r.step.TimeToAllWaitPaySeconds = last.Sub(r.start).Seconds()
		r.step.OrdersPerSecond = float64(len(won)) / r.step.TimeToAllWaitPaySeconds
		if span := last.Sub(firstOf(reached)).Seconds(); len(reached) > 1 && span > 0 {
			r.step.CreationPerSecond = float64(len(reached)-1) / span
		}
	}
	if err := created(); err != nil {
		return err
	}

	// A few unpaid orders are cancelled by their shoppers, for the cost
	// of the cancel path (at most half of them: the rest time out).
	// cancelled are the orders tried; byShopper, those the cancel closed.
	var cancelled, byShopper []result
	if r.costs != nil {
		cancelled = rest[:min(r.cfg.CostSample, len(rest)/2)]
		for _, x := range cancelled {
			var deadline time.Time
			if w, ok := reached[x.orderNo]; ok {
				deadline = w.order.PayDeadline
			}
			if r.cancel(ctx, x, deadline) {
				byShopper = append(byShopper, x)
			}
		}
		f.Cancelled = len(byShopper)
	}
	var paying time.Time
	var payCPU *cpuSnap
	if r.cfg.PayAfterCreation {
		paying, payCPU = time.Now(), r.cpu.mark()
		r.parallel(pay, func(x result) { r.pay(ctx, x) })
	}
	paid, _ := r.waitAll(ctx, pay, r.cfg.Settle, nil, changedAt, seckill.StatusPaid)
	f.Paid = len(paid)
	// An order paid late and not PAID is one its timer closed first: it
	// must be CLOSED (the payment, if one was taken, is refunded).
	var late, paidOnes []result
	for _, x := range pay {
		if p, ok := paid[x.orderNo]; ok {
			paidOnes = append(paidOnes, x)
			if payNow != nil && p.at.Before(last) {
				r.step.PaidDuringCreation++
			}
		} else if _, ok := r.paidLate.Load(x.orderNo); ok {
			late = append(late, x)
		}
	}
	if len(late) > 0 {
		fmt.Fprintf(r.cfg.Progress, "  %s: %d orders were paid from their pay deadline on, and closed by their timer first (a slow machine: raise the stack's pay timeout, BENCH_PAY_TIMEOUT in make bench)\n", r.levelName(), len(late))
		closedLate, missed := r.waitAll(ctx, late, r.cfg.Settle, nil, changedAt, seckill.StatusClosed)
		f.Closed = len(closedLate)
		if len(closedLate) < len(late) {
			r.problem("%d orders paid after their deadline are neither PAID nor CLOSED (%v)", len(late)-len(closedLate), missed)
		}
	}
	if f.Paid+len(late) < len(pay) {
		r.problem("%d paid orders never reached PAID", len(pay)-f.Paid-len(late))
	} else if !paying.IsZero() && f.Paid > 0 {
		r.step.PaymentsPerSecond = float64(f.Paid) / lastOf(paid).Sub(paying).Seconds()
		if p := r.cpu.phase(payCPU); p.serverSeconds > 0 {
			spent.PayMs, spent.PayShare = p.msPer(f.Paid), p.share
		}
	}
	r.count(ctx, pathPaid, paidOnes[:min(r.cfg.CostSample, len(paidOnes))])
	if r.costs != nil && f.Paid == len(pay) {
		r.refund(ctx, pay[len(pay)-min(r.cfg.CostSample, len(pay)/2):])
	}
	if closed, _ := r.waitAll(ctx, cancelled, r.cfg.Settle, nil, changedAt, seckill.StatusClosed); len(cancelled) > 0 && len(closed) == len(cancelled) {
		r.count(ctx, pathCancel, byShopper)
	}
	if r.cfg.PayTimeout > 0 && len(rest) > 0 {
		fmt.Fprintf(r.cfg.Progress, "  %s: waiting up to %s for %d unpaid orders to time out\n", r.levelName(), r.cfg.PayTimeout+r.cfg.Settle, len(rest))
		// Nothing closes before the first deadline: the server's CPU for
		// the closes is read from there.
		select {
		case <-time.After(time.Until(firstDeadline(rest[len(cancelled):], reached))):
		case <-ctx.Done():
		}
		closeCPU := r.cpu.mark()
		closed, missed := r.waitAll(ctx, rest, r.cfg.PayTimeout+r.cfg.Settle, nil, changedAt, seckill.StatusClosed)
		f.Closed += len(closed)
		if len(closed) < len(rest) {
			r.problem("%d unpaid orders did not close after the pay timeout (%v)", len(rest)-len(closed), missed)
		}
		timedOut := rest[len(cancelled):]
		r.step.Closing = closing(timedOut, reached, closed)
		if p := r.cpu.phase(closeCPU); p.serverSeconds > 0 && r.step.Closing != nil {
			spent.CloseMs, spent.CloseShare = p.msPer(r.step.Closing.Orders), p.share
		}
		r.count(ctx, pathTimeout, timedOut[:min(r.cfg.CostSample, len(timedOut))])
	}
	if spent.CreateShare > 0 {
		r.step.TemporalCPU = &spent
	}
	return nil
}

// cancel cancels an unpaid order as its shopper does; false when its pay
// timer closed it first. On a slow machine the creation can outlast the
// first orders' pay timeout: a cancel after the deadline then meets a
// CLOSED order (CONFLICT), the race the workflow settles, not a fault.
func (r *stepRunner) cancel(ctx context.Context, x result, deadline time.Time) bool {
	_, err := r.shoppers[x.shopper].api.Cancel(ctx, x.orderNo)
	if err == nil {
		return true
	}
	if !closedByItsTimer(err, deadline, time.Now()) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.problem("cancel of %s: %v", x.orderNo, err)
	}
	return false
}

// closedByItsTimer tells a cancel refused because the order's pay
// deadline had passed (CONFLICT: it is CLOSED) from a fault.
func closedByItsTimer(err error, deadline, now time.Time) bool {
	return seckill.ErrorCode(err) == seckill.ECONFLICT && !deadline.IsZero() && !now.Before(deadline)
}

// refund has an operator refund a few paid orders, for the cost of the
// refunded path: the order's workflow and its refund's
// (refund:<payment_id>), which the stack's refund relay starts.
func (r *stepRunner) refund(ctx context.Context, orders []result) {
	if len(orders) == 0 {
		return
	}
	for _, x := range orders {
		if _, err := r.api.RefundOrder(ctx, x.orderNo, "bench: the refunded path's cost",
			client.ChangeOptions{RequestID: "bench-refund:" + x.orderNo}); err != nil {
			r.problem("refund of %s: %v", x.orderNo, err)
			return
		}
	}
	refunded, missed := r.waitAll(ctx, orders, r.cfg.Settle, nil, changedAt, seckill.StatusRefunded)
	r.step.Funnel.Refunded = len(refunded)
	if len(refunded) < len(orders) {
		r.problem("%d refunded orders never reached REFUNDED (is the worker's refund relay running?) (%v)", len(orders)-len(refunded), missed)
		return
	}
	for _, x := range orders {
		paymentID, _ := r.paymentIDs.Load(x.orderNo)
		cctx, cancel := context.WithTimeout(ctx, r.cfg.Settle)
		order, err := temporal.OrderCost(cctx, r.costs.c, x.orderNo)
		var refund temporal.Cost
		if err == nil {
			refund, err = temporal.RefundCost(cctx, r.costs.c, fmt.Sprint(paymentID))
		}
		cancel()
		if err != nil {
			r.problem("actions of refunded order %s: %v", x.orderNo, err)
			continue
		}
		r.costs.byPath[pathRefunded] = append(r.costs.byPath[pathRefunded], order.Plus(refund))
	}
}

// pay pays an order as its shopper does: the checkout
// (POST /api/v1/orders/{no}/payment), then the provider's page, whose
// signed webhook reaches the API. The bench's stack runs the sandbox
// provider, whose page pays at once. Retried as a shopper would click
// again while the API is not ready (the order still being created): a
// second click at the page is the provider sending its webhook again.
//
// A shopper who comes back from the order's earliest deadline on (payBy:
// a machine that created the orders slower than the pay timeout) finds it
// closed, or pays as its timer fires: the race the workflow settles. The
// order is then counted as paid late (paidLate), not as a fault.
func (r *stepRunner) pay(ctx context.Context, x result) {
	shop := r.shoppers[x.shopper].api
	payBy := r.payBy(x)
	var last string
	for attempt := 0; attempt < 50 && ctx.Err() == nil; attempt++ {
		if paidLate(payBy, time.Now()) {
			r.paidLate.Store(x.orderNo, true)
			return
		}
		co, err := shop.Checkout(ctx, x.orderNo)
		if err == nil && co.Provider != sandbox.Name {
			last = fmt.Sprintf("the stack's payment provider is %q: the bench pays at the sandbox's page", co.Provider)
			break
		}
		if err == nil {
			var code int
			if code, err = shop.PaySandbox(ctx, co.CheckoutURL, false); err == nil && code == http.StatusOK {
				r.paymentIDs.Store(x.orderNo, co.PaymentID)
				if paidLate(payBy, time.Now()) {
					r.paidLate.Store(x.orderNo, true)
				}
				return
			} else if err == nil {
				err = fmt.Errorf("checkout page answered %d", code)
			}
		}
		last = err.Error()
		time.Sleep(100 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problem("payment of %s was never accepted: %s", x.orderNo, last)
}

// payBy is the earliest an order's pay deadline can be: its purchase was
// sent at x.at, and the reservation whose time starts the stack's pay
// timeout was made after that. Zero when the timeout is not known
// (--pay-timeout 0).
func (r *stepRunner) payBy(x result) time.Time {
	if r.cfg.PayTimeout <= 0 {
		return time.Time{}
	}
	return r.start.Add(x.at).Add(r.cfg.PayTimeout)
}

// paidLate tells whether a payment made (or tried) at that time came from
// the order's earliest pay deadline on.
func paidLate(payBy, at time.Time) bool { return !payBy.IsZero() && !at.Before(payBy) }

// firstDeadline is the earliest pay deadline the WAIT_PAY views of orders
// showed (zero when none did).
func firstDeadline(orders []result, created map[string]seen) time.Time {
	var first time.Time
	for _, x := range orders {
		if w, ok := created[x.orderNo]; ok {
			if d := w.order.PayDeadline; !d.IsZero() && (first.IsZero() || d.Before(first)) {
				first = d
			}
		}
	}
	return first
}

// closing measures the closes of the timed-out orders (see Closing), with
// the pay deadlines their WAIT_PAY views showed (a closed order's view has
// none); nil when none closed.
func closing(timedOut []result, created, closed map[string]seen) *Closing {
	var firstDeadline, lastDeadline, lastClose time.Time
	var lags []float64
	for _, x := range timedOut {
		c, ok := closed[x.orderNo]
		w, ok2 := created[x.orderNo]
		if !ok || !ok2 || w.order.PayDeadline.IsZero() {
			continue
		}
		d := w.order.PayDeadline
		lags = append(lags, c.at.Sub(d).Seconds())
		if firstDeadline.IsZero() || d.Before(firstDeadline) {
			firstDeadline = d
		}
		if d.After(lastDeadline) {
			lastDeadline = d
		}
		if c.at.After(lastClose) {
			lastClose = c.at
		}
	}
	span := lastClose.Sub(firstDeadline).Seconds()
	if len(lags) == 0 || span <= 0 {
		return nil
	}
	p50, p99 := latencyPercentiles(lags)
	return &Closing{Orders: len(lags), AfterLastDeadlineSeconds: lastClose.Sub(lastDeadline).Seconds(),
		PerSecond: float64(len(lags)) / span, LagP50Seconds: p50, LagP99Seconds: p99}
}

// reconcile reads the session's reconcile report once nothing is in flight.
func (r *stepRunner) reconcile(ctx context.Context) {
	deadline := time.Now().Add(r.cfg.Settle)
	var rep *seckill.Report
	for ctx.Err() == nil {
		var err error
		if rep, err = r.api.Reconcile(ctx, r.step.SessionID); err != nil {
			r.problem("reconcile: %v", err)
			return
		}
		if rep.InFlight == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if rep == nil {
		r.problem("reconcile: %v", ctx.Err())
		return
	}
	r.step.Reconcile = rep
	if !rep.OK {
		r.problem("reconcile: %v", rep.Problems)
	}
	if paid, refunded := rep.Orders[seckill.StatusPaid], rep.Orders[seckill.StatusRefunded]; paid != r.step.Funnel.Paid-r.step.Funnel.Refunded || refunded != r.step.Funnel.Refunded {
		r.problem("reconcile counts %d PAID and %d REFUNDED orders, the bench paid %d and refunded %d", paid, refunded, r.step.Funnel.Paid, r.step.Funnel.Refunded)
	}
}
