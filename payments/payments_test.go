package payments_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/payments"
)

// checkouts is an in-memory payments.Checkouts.
type checkouts struct {
	m    map[string]*seckill.Checkout
	err  error
	save []seckill.Checkout
}

func (c *checkouts) SaveCheckout(_ context.Context, co *seckill.Checkout) error {
	if c.err != nil {
		return c.err
	}
	c.save = append(c.save, *co)
	if old, ok := c.m[co.OrderNo]; ok && old.PaymentID != "" {
		return nil
	}
	c.m[co.OrderNo] = co
	return nil
}

func (c *checkouts) Checkout(_ context.Context, no string) (*seckill.Checkout, error) {
	if c.err != nil {
		return nil, c.err
	}
	if co, ok := c.m[no]; ok {
		return co, nil
	}
	return nil, seckill.Errorf(seckill.ENOTFOUND, "no checkout")
}

// provider answers the query and the cancel as scripted.
type provider struct {
	query, cancel seckill.PaymentState
	err           error
	calls         []string
	saw           []seckill.CheckoutRequest
}

func (p *provider) Name() string { return "fake" }

func (p *provider) CreatePayment(_ context.Context, r seckill.CheckoutRequest) (*seckill.Checkout, error) {
	p.calls = append(p.calls, "create")
	p.saw = append(p.saw, r)
	if p.err != nil {
		return nil, p.err
	}
	return &seckill.Checkout{PaymentID: "pay_" + r.OrderNo, CheckoutURL: "https://pay.example/" + r.OrderNo,
		ExpiresAt: r.ExpiresAt.Add(time.Hour)}, nil
}

func (p *provider) QueryPayment(_ context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.calls = append(p.calls, "query")
	if p.err != nil {
		return seckill.ProviderPayment{}, p.err
	}
	return seckill.ProviderPayment{PaymentID: ref.PaymentID, State: p.query, AmountCents: 300}, nil
}

func (p *provider) CancelPayment(_ context.Context, ref seckill.PaymentRef) (seckill.ProviderPayment, error) {
	p.calls = append(p.calls, "cancel")
	return seckill.ProviderPayment{PaymentID: ref.PaymentID, State: p.cancel, AmountCents: 300}, nil
}

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// received is the payment a webhook recorded (RECEIVED), if any.
type received struct{ p *seckill.Payment }

func (r received) ReceivedPayment(context.Context, string) (*seckill.Payment, error) { return r.p, nil }

// What the provider's answer at the deadline means: the order is paid
// after all, may close, or stays open while the provider cannot say.
func TestSettleBeforeClose(t *testing.T) {
	down := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name          string
		noCheckout    bool
		query, cancel seckill.PaymentState
		err           error
		waited        time.Duration
		paid          bool
		received      bool // a webhook recorded a payment of the order
		unavailable   bool
		calls         []string
	}{
		{name: "never checked out: close without asking", noCheckout: true},
		{name: "paid, webhook lost", query: seckill.PaymentSucceeded, paid: true, calls: []string{"query"}},
		{name: "open: cancelled, then close", query: seckill.PaymentOpen, cancel: seckill.PaymentCanceled, calls: []string{"query", "cancel"}},
		{name: "paid during the cancel", query: seckill.PaymentOpen, cancel: seckill.PaymentSucceeded, paid: true, calls: []string{"query", "cancel"}},
		// A checkout being opened right now may create its payment after
		// the query: the cancel makes sure it can never be paid.
		{name: "none at the provider: cancelled all the same", query: seckill.PaymentNone, cancel: seckill.PaymentNone, calls: []string{"query", "cancel"}},
		{name: "none, then created and paid during the cancel", query: seckill.PaymentNone, cancel: seckill.PaymentSucceeded, paid: true, calls: []string{"query", "cancel"}},
		{name: "cancelled before", query: seckill.PaymentCanceled, calls: []string{"query"}},
		{name: "money in flight: kept open", query: seckill.PaymentProcessing, unavailable: true, calls: []string{"query"}},
		{name: "money in flight past the grace: close", query: seckill.PaymentProcessing, waited: 3 * time.Minute, calls: []string{"query"}},
		{name: "provider down: kept open", err: down, waited: time.Minute, unavailable: true, calls: []string{"query"}},
		{name: "provider down past the grace: close", err: down, waited: 2 * time.Minute, calls: []string{"query"}},
		{name: "query refused: kept open", err: seckill.Errorf(seckill.ECONFLICT, "no"), unavailable: true, calls: []string{"query"}},
		{name: "provider down, the webhook came: paid by it", err: down, received: true, calls: []string{"query"}},
		{name: "money in flight, the webhook came: paid by it", query: seckill.PaymentProcessing, received: true, calls: []string{"query"}},
		{name: "provider down past the grace, the webhook came: paid by it", err: down, waited: time.Hour, received: true, calls: []string{"query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := &checkouts{m: map[string]*seckill.Checkout{}}
			if !tc.noCheckout {
				co.m["7-a"] = &seckill.Checkout{OrderNo: "7-a", PaymentID: "pay_7-a"}
			}
			p := &provider{query: tc.query, cancel: tc.cancel, err: tc.err}
			webhook := &seckill.Payment{EventID: "evt_1", PaymentID: "pay_7-a", OrderNo: "7-a", AmountCents: 300, TraceID: "hook"}
			s := &payments.Settle{Provider: p, Checkouts: co, Received: received{}, Now: func() time.Time { return t0.Add(tc.waited) }}
			if tc.received {
				s.Received = received{webhook}
			}
			paid, err := s.BeforeClose(context.Background(), "7-a", "tr", t0)
			if tc.unavailable {
				require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
				require.Nil(t, paid)
			} else {
				require.NoError(t, err)
			}
			switch {
			case tc.paid:
				require.Equal(t, &seckill.Payment{EventID: "settle:pay_7-a", PaymentID: "pay_7-a", OrderNo: "7-a", AmountCents: 300, TraceID: "tr"}, paid)
			case tc.received:
				require.Equal(t, webhook, paid)
			default:
				require.Nil(t, paid)
			}
			require.Equal(t, tc.calls, p.calls)
		})
	}
}

// MySQL down: the close cannot run either; the error is retried, never a
// close without asking.
func TestSettleRetriesWhenTheCheckoutCannotBeRead(t *testing.T) {
	s := &payments.Settle{Provider: &provider{}, Checkouts: &checkouts{err: errors.New("mysql: bad connection")}, Now: time.Now}
	paid, err := s.BeforeClose(context.Background(), "7-a", "tr", time.Now().Add(-time.Hour))
	require.Error(t, err)
	require.Nil(t, paid)
}

func TestCheckoutOpen(t *testing.T) {
	deadline := t0.Add(10 * time.Minute)
	order := func(st seckill.Status) *seckill.Order {
		return &seckill.Order{OrderNo: "7-a", AmountCents: 300, Status: st, PayDeadline: deadline, TraceID: "tr"}
	}
	newCheckout := func(p *provider, co *checkouts) *payments.Checkout {
		return &payments.Checkout{Provider: p, Checkouts: co, Currency: "eur", MinLeft: time.Second, Now: func() time.Time { return t0 }}
	}

	t.Run("opens once, recorded before the provider is asked, expiry capped at the deadline", func(t *testing.T) {
		p, co := &provider{}, &checkouts{m: map[string]*seckill.Checkout{}}
		c, err := newCheckout(p, co).Open(context.Background(), order(seckill.StatusWaitPay))
		require.NoError(t, err)
		require.Equal(t, &seckill.Checkout{Provider: "fake", OrderNo: "7-a", PaymentID: "pay_7-a",
			CheckoutURL: "https://pay.example/7-a", ExpiresAt: deadline}, c)
		require.Equal(t, []seckill.CheckoutRequest{{OrderNo: "7-a", AmountCents: 300, Currency: "eur", ExpiresAt: deadline, TraceID: "tr"}}, p.saw)
		require.Len(t, co.save, 2)
		require.Empty(t, co.save[0].PaymentID, "the intent is recorded before the provider is asked")
		require.Equal(t, "pay_7-a", co.save[1].PaymentID)
	})
	t.Run("in its session's currency, else the deployment's", func(t *testing.T) {
		for sessionCurrency, want := range map[string]string{"jpy": "jpy", "": "eur"} {
			p := &provider{}
			c := newCheckout(p, &checkouts{m: map[string]*seckill.Checkout{}})
			c.Sessions = sessions{Currency: sessionCurrency}
			_, err := c.Open(context.Background(), order(seckill.StatusWaitPay))
			require.NoError(t, err)
			require.Equal(t, want, p.saw[0].Currency)
		}
	})
	t.Run("a QUEUED order can be paid", func(t *testing.T) {
		_, err := newCheckout(&provider{}, &checkouts{m: map[string]*seckill.Checkout{}}).Open(context.Background(), order(seckill.StatusQueued))
		require.NoError(t, err)
	})
	for _, st := range []seckill.Status{seckill.StatusPaid, seckill.StatusClosed, seckill.StatusFailed, seckill.StatusRefundPending, seckill.StatusRefunded} {
		t.Run("refused: "+string(st), func(t *testing.T) {
			p := &provider{}
			_, err := newCheckout(p, &checkouts{m: map[string]*seckill.Checkout{}}).Open(context.Background(), order(st))
			require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))
			require.Empty(t, p.calls)
		})
	}
	t.Run("refused: past the deadline", func(t *testing.T) {
		o := order(seckill.StatusWaitPay)
		o.PayDeadline = t0.Add(500 * time.Millisecond)
		p := &provider{}
		_, err := newCheckout(p, &checkouts{m: map[string]*seckill.Checkout{}}).Open(context.Background(), o)
		require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))
		require.Empty(t, p.calls)
	})
	t.Run("provider down: 503, its cause kept for the logs only", func(t *testing.T) {
		p := &provider{err: errors.New("dial tcp 10.0.0.1:443: i/o timeout")}
		_, err := newCheckout(p, &checkouts{m: map[string]*seckill.Checkout{}}).Open(context.Background(), order(seckill.StatusWaitPay))
		require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))
		require.NotContains(t, seckill.ErrorMessage(err), "10.0.0.1")
		require.ErrorContains(t, err, "i/o timeout")
	})
}

// sessions answers every order's session with its currency.
type sessions struct{ Currency string }

func (s sessions) Session(_ context.Context, id int64) (*seckill.Session, int, error) {
	return &seckill.Session{ID: id, Currency: s.Currency}, 0, nil
}
