package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill"
)

// Opener is the provider's side of a checkout.
type Opener interface {
	Name() string
	CreatePayment(ctx context.Context, r seckill.CheckoutRequest) (*seckill.Checkout, error)
}

// SessionReader reads the session an order was sold in (its currency).
type SessionReader interface {
	Session(ctx context.Context, id int64) (*seckill.Session, int, error)
}

// Checkout opens the checkout of orders (POST /api/v1/orders/{no}/payment).
type Checkout struct {
	Provider  Opener
	Checkouts Checkouts
	// Sessions give each order its session's currency; nil, or a session
	// without one, means Currency.
	Sessions SessionReader
	// Currency is the deployment's (SECKILL_CURRENCY).
	Currency string
	// MinLeft is the least time before the pay deadline a new checkout
	// needs: a payment opened closer to the deadline would mostly be paid
	// after the order closed, and refunded.
	MinLeft time.Duration
	Now     func() time.Time
	// Timeout bounds one call to the provider (DefaultTimeout when 0).
	Timeout time.Duration
}

// DefaultTimeout bounds one call to a payment provider.
const DefaultTimeout = 5 * time.Second

// Open returns the provider's payment for o, created on the first call and
// the same on every later one. The order must still be payable: QUEUED
// (the payment is applied once its row exists) or WAIT_PAY, with time left.
//
// The checkout is recorded before the provider is asked: a close that runs
// while the provider answers then knows to ask it too, so no payment can
// open behind the close's back.
func (s *Checkout) Open(ctx context.Context, o *seckill.Order) (*seckill.Checkout, error) {
	if o.Status != seckill.StatusQueued && o.Status != seckill.StatusWaitPay {
		return nil, seckill.Errorf(seckill.ECONFLICT, "order %s is %s and can no longer be paid", o.OrderNo, o.Status)
	}
	if left := o.PayDeadline.Sub(s.Now()); left < s.MinLeft {
		return nil, seckill.Errorf(seckill.ECONFLICT, "order %s is past its pay deadline and can no longer be paid", o.OrderNo)
	}
	currency, err := s.currency(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := s.Checkouts.SaveCheckout(ctx, &seckill.Checkout{Provider: s.Provider.Name(), OrderNo: o.OrderNo, ExpiresAt: o.PayDeadline}); err != nil {
		return nil, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := s.Provider.CreatePayment(pctx, seckill.CheckoutRequest{
		OrderNo: o.OrderNo, AmountCents: o.AmountCents, Currency: currency, ExpiresAt: o.PayDeadline, TraceID: o.TraceID,
	})
	if err != nil {
		return nil, unavailable(err, "the payment provider did not open the payment; retry")
	}
	c.Provider, c.OrderNo = s.Provider.Name(), o.OrderNo
	if c.ExpiresAt.IsZero() || c.ExpiresAt.After(o.PayDeadline) {
		c.ExpiresAt = o.PayDeadline
	}
	if err := s.Checkouts.SaveCheckout(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// currency is what o is paid in: its session's currency, else the
// deployment's.
func (s *Checkout) currency(ctx context.Context, o *seckill.Order) (string, error) {
	if s.Sessions == nil {
		return s.Currency, nil
	}
	sess, _, err := s.Sessions.Session(ctx, o.SessionID)
	if err != nil {
		return "", err
	}
	if sess.Currency != "" {
		return sess.Currency, nil
	}
	return s.Currency, nil
}

// unavailable keeps a domain refusal as it is and makes anything else a
// 503 the caller retries, wrapping the cause for the logs (the message
// the caller reads is msg alone).
func unavailable(err error, msg string) error {
	if code := seckill.ErrorCode(err); code != seckill.EINTERNAL && code != "" {
		return err
	}
	return fmt.Errorf("%w: %w", seckill.Errorf(seckill.EUNAVAILABLE, "%s", msg), err)
}
