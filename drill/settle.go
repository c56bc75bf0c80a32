package drill

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/client"
	"github.com/seckill/seckill/sandbox"
)

// settle brings every accepted order to its row, pays part, cancels part,
// leaves the rest to the pay timeout (when it is short), waits for every
// order's end, and pays one closed order late.
func (r *runner) settle(ctx context.Context, won []order) error {
	short := r.cfg.PayTimeout > 0
	created := []seckill.Status{seckill.StatusWaitPay}
	if short {
		// The timeout may close an order before the drill sees it waiting.
		created = append(created, seckill.StatusClosed)
	}
	for _, o := range won {
		if _, err := r.waitStatus(ctx, o, created...); err != nil {
			r.problem("accepted order never got its row: %v", err)
			return nil
		}
	}
	r.logf("all %d accepted orders have their row", len(won))
	if r.cfg.DuringSettle != nil {
		r.logf("settling: breaking something")
		r.cfg.DuringSettle()
	}
	nPay := int(float64(len(won)) * r.cfg.PayRatio)
	nCancel := len(won) - nPay
	if short {
		nCancel /= 2
	}
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	var wg sync.WaitGroup
	for i, o := range won {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case i < nPay:
				// 409: the pay timeout closed it before its checkout
				// (short timeouts only).
				if code, err := r.pay(ctx, o); err != nil || (code != http.StatusOK && !(short && code == http.StatusConflict)) {
					r.problem("payment of %s answered %d %v", o.no, code, err)
				}
			case i < nPay+nCancel:
				code, err := r.cancel(ctx, o)
				// 409: the pay timeout closed it first (short timeouts only).
				if err != nil || (code != http.StatusAccepted && !(short && code == http.StatusConflict)) {
					r.problem("cancel of %s answered %d %v", o.no, code, err)
				}
			}
		}()
	}
	wg.Wait()
	ended := []seckill.Status{seckill.StatusPaid, seckill.StatusClosed, seckill.StatusRefundPending, seckill.StatusRefunded, seckill.StatusFailed}
	for i, o := range won {
		got, err := r.waitStatus(ctx, o, ended...)
		if err != nil {
			r.problem("order %s: %v", o.no, err)
			continue
		}
		switch {
		case got == seckill.StatusFailed:
			r.problem("order %s ended FAILED: Redis admitted what MySQL refused", o.no)
		case got == seckill.StatusPaid && i >= nPay:
			r.problem("order %s ended PAID, never paid", o.no)
		case got == seckill.StatusPaid:
			r.res.Paid++
		case i < nPay && !short:
			r.problem("order %s paid but ended %s", o.no, got)
		case i < nPay && got == seckill.StatusClosed:
			r.res.TimedOut++ // closed before its checkout: nothing was paid
		case i < nPay:
			r.res.Refunds++ // the payment lost the race with the timeout
		case i < nPay+nCancel:
			r.res.Cancelled++
		default:
			r.res.TimedOut++
		}
	}
	r.logf("%d paid, %d cancelled, %d timed out, %d payments lost to the timeout", r.res.Paid, r.res.Cancelled, r.res.TimedOut, r.res.Refunds)
	if len(won) > nPay {
		// The last order was never paid: it is closed by now.
		late := won[len(won)-1]
		r.res.LateOrder = late.no
		code, err := r.payLate(ctx, late, "drill_late_"+stamp)
		if err != nil || code != http.StatusOK {
			r.problem("late payment answered %d %v", code, err)
		}
		if _, err := r.waitStatus(ctx, late, seckill.StatusRefundPending, seckill.StatusRefunded); err != nil {
			r.problem("late payment: %v", err)
		}
		r.res.Refunds++
		r.logf("late payment on %s recorded for refund", late.no)
	}
	return nil
}

// order is an accepted order, followed and settled as its shopper would.
type order struct {
	user int64
	api  *client.Client // the shopper's
	no   string
}

// waitStatus polls an order until it has one of want.
func (r *runner) waitStatus(ctx context.Context, o order, want ...seckill.Status) (seckill.Status, error) {
	wctx, cancel := context.WithTimeout(ctx, r.cfg.Settle)
	defer cancel()
	got, err := o.api.WaitOrder(wctx, o.no, want...)
	if err != nil {
		return "", err
	}
	return got.Status, nil
}

// pay pays an order as its shopper does: the checkout
// (POST /api/v1/orders/{no}/payment), then the sandbox's page, which sends
// the provider's signed webhook. Against a stack with another provider the
// drill stands in for it: it sends the webhook of the checkout's payment
// itself. 409: the order could no longer be paid (closed first).
func (r *runner) pay(ctx context.Context, o order) (int, error) {
	return r.until(ctx, "payment of "+o.no, func() (int, error) {
		co, err := o.api.Checkout(ctx, o.no)
		if err != nil {
			return status(http.StatusCreated, err)
		}
		if co.Provider == sandbox.Name {
			return o.api.PaySandbox(ctx, co.CheckoutURL, false)
		}
		_, err = r.api.Pay(ctx, seckill.Payment{PaymentID: co.PaymentID, OrderNo: o.no, AmountCents: 100})
		return status(http.StatusOK, err)
	})
}

// payLate sends the provider's webhook of a payment made at the last
// moment whose webhook came after the order closed: the late payment that
// must be refunded.
func (r *runner) payLate(ctx context.Context, o order, paymentID string) (int, error) {
	return r.until(ctx, "late payment of "+o.no, func() (int, error) {
		_, err := r.api.Pay(ctx, seckill.Payment{PaymentID: paymentID, OrderNo: o.no, AmountCents: 100})
		return status(http.StatusOK, err)
	})
}

func (r *runner) cancel(ctx context.Context, o order) (int, error) {
	return r.until(ctx, "cancel of "+o.no, func() (int, error) {
		_, err := o.api.Cancel(ctx, o.no)
		return status(http.StatusAccepted, err)
	})
}
