package payments

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
)

// Asker is the provider's side of the question asked before an order
// closes unpaid.
type Asker interface {
	QueryPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error)
	CancelPayment(ctx context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error)
}

// Received are the payments the webhooks recorded (RECEIVED, before their
// signal) and no workflow applied yet.
type Received interface {
	// ReceivedPayment is the order's first such payment; nil when none.
	ReceivedPayment(ctx context.Context, orderNo string) (*seckill.Payment, error)
}

// Settle asks the provider, before an unpaid order closes (its pay timer
// fired, its shopper cancelled), whether it was paid after all: a payment
// whose webhook was lost or is late must make the order PAID, not a
// refund. A payment still open, or none yet, is cancelled first, so the
// closed order cannot be paid afterwards.
type Settle struct {
	Provider  Asker
	Checkouts Checkouts
	// Received is where the close looks while the provider cannot answer:
	// a payment whose webhook came meanwhile waits there, not yet applied.
	Received Received
	// Grace is how long after the question was first asked an order stays
	// open while the provider cannot answer (seckill.DefaultPayGrace when
	// 0); past it the order closes anyway and a payment that did go
	// through is refunded when its webhook comes.
	Grace time.Duration
	// Timeout bounds one call to the provider (DefaultTimeout when 0).
	Timeout time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

// BeforeClose returns the payment that paid the order, or nil when the
// order may close. askedAt is when the close was first decided (the pay
// deadline, the cancel): the grace counts from it across retries. A
// provider that cannot answer within the grace is an EUNAVAILABLE error:
// the caller retries with backoff and the order stays open, unless a
// webhook recorded a payment of the order meanwhile (then that payment).
func (s *Settle) BeforeClose(ctx context.Context, orderNo, traceID string, askedAt time.Time) (*seckill.Payment, error) {
	c, err := s.Checkouts.Checkout(ctx, orderNo)
	if seckill.ErrorCode(err) == seckill.ENOTFOUND {
		return nil, nil // never opened: nothing to pay with
	} else if err != nil {
		return nil, err
	}
	ref := seckill.PaymentRef{OrderNo: orderNo, PaymentID: c.PaymentID}
	p, err := s.call(ctx, s.Provider.QueryPayment, ref)
	if err == nil && (p.State == seckill.PaymentOpen || p.State == seckill.PaymentNone) {
		// NONE too: a checkout still being opened may create its payment
		// after the query; cancelled first, it can never be paid.
		p, err = s.call(ctx, s.Provider.CancelPayment, ref)
	}
	if err == nil {
		switch p.State {
		case seckill.PaymentSucceeded:
			s.log().Info("paid at the provider before the close: applying it", "order_no", orderNo,
				"trace_id", traceID, "payment_id", p.PaymentID)
			return p.Captured(orderNo, traceID), nil
		case seckill.PaymentNone, seckill.PaymentCanceled:
			return nil, nil
		}
		err = seckill.Errorf(seckill.EUNAVAILABLE, "payment %s is %s at the provider: not decided yet", p.PaymentID, p.State)
	}
	// Undecided. A payment whose webhook came meanwhile is recorded
	// (RECEIVED, before its signal) while its signal waits behind this
	// close: it pays the order now, rather than being refunded after it.
	if r, rerr := s.Received.ReceivedPayment(ctx, orderNo); rerr != nil {
		return nil, rerr
	} else if r != nil {
		s.log().Info("a webhook paid the order while the provider could not answer: applying it", "order_no", orderNo,
			"trace_id", traceID, "payment_id", r.PaymentID, "error", err)
		return r, nil
	}
	if waited := s.Now().Sub(askedAt); waited < s.grace() {
		// Whatever the provider said (down, slow, even a refusal of the
		// query or the cancel), it did not say "not paid": retry.
		return nil, fmt.Errorf("%w: %w", seckill.Errorf(seckill.EUNAVAILABLE,
			"the payment provider cannot say whether the order was paid; keeping it open"), err)
	}
	s.log().Warn("payment provider undecided past the pay grace: closing the order; a payment that went through will be refunded",
		"order_no", orderNo, "trace_id", traceID, "grace", s.grace(), "error", err)
	return nil, nil
}

func (s *Settle) call(ctx context.Context, f func(context.Context, seckill.PaymentRef) (seckill.ProviderPayment, error), ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx, ref)
}

func (s *Settle) grace() time.Duration {
	if s.Grace <= 0 {
		return seckill.DefaultPayGrace
	}
	return s.Grace
}

func (s *Settle) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}
