package relay

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
)

// RefundStore is the MySQL side of the refund relay (MySQL is the outbox
// here: ApplyPayment writes REFUND_PENDING in its transaction, the webhook
// writes RECEIVED before it signals).
type RefundStore interface {
	DueRefunds(ctx context.Context, limit int) ([]seckill.Refund, error)
	ClaimRefund(ctx context.Context, paymentID string, lease time.Duration) (bool, error)
	RefundCounts(ctx context.Context) (map[string]int, error)
	ReceivedPayments(ctx context.Context, olderThan time.Duration, after int64, limit int) ([]seckill.Payment, int64, error)
	ApplyPayment(ctx context.Context, p *seckill.Payment) (seckill.PaymentOutcome, *seckill.Order, error)
}

// RefundStarter starts a payment's refund run and tells whether an order's
// workflow is running.
type RefundStarter interface {
	// StartRefund: started is false when a run is going on or completed.
	StartRefund(ctx context.Context, r *seckill.Refund) (started bool, err error)
	Running(ctx context.Context, orderNo string) (bool, error)
	// Pay signals a payment to the order's running workflow again.
	Pay(ctx context.Context, p *seckill.Payment) error
}

// Views caches order views for polls (the Redis gate).
type Views interface {
	PutOrder(ctx context.Context, o *seckill.Order) error
}

// Defaults of the refund relay.
const (
	// DefaultRefundLease is how long a started refund run is left alone
	// before the relay looks at it again: well past one run's provider
	// retries, so only a lost run is started again (and a run still going
	// is found by its workflow id, never doubled).
	DefaultRefundLease = 5 * time.Minute
	// DefaultReceivedAge is how long a RECEIVED payment is left to its
	// order's workflow before the relay checks whether one still runs.
	DefaultReceivedAge = time.Minute
	// DefaultReceivedBatch is how many RECEIVED payments one pass looks at.
	DefaultReceivedBatch = 100
)

// Refunds starts a refund run (workflow refund:<payment_id>) for every
// payment whose refund is due, whichever path recorded it: the order
// workflow (a payment during or after the close), the API (a payment after
// the workflow ended) or this relay. Refunds that failed wait their backoff
// and parked ones are skipped (see seckill.RefundRetry), so the due ones
// are taken oldest-due first and a failing refund never starves a newer
// one.
//
// It also settles payments the webhook wrote as RECEIVED that no workflow
// recorded: once the order's workflow is not running (it failed, was
// terminated or lost), the payment is applied as the workflow would have:
// captured if the order still waits for it, otherwise a refund.
type Refunds struct {
	Store   RefundStore
	Starter RefundStarter
	// Views refreshes an order's cached view after the relay settled a
	// payment; optional.
	Views Views
	Log   *slog.Logger
	// Metrics counts the relay's actions and the refunds by state; optional.
	Metrics *metrics.Metrics
	// Lease and ReceivedAge default to DefaultRefundLease and
	// DefaultReceivedAge.
	Lease       time.Duration
	ReceivedAge time.Duration

	// ReceivedBatch is how many RECEIVED payments a pass looks at
	// (DefaultReceivedBatch when 0).
	ReceivedBatch int
	// receivedAfter is where the walk through the RECEIVED payments
	// goes on (see settleReceived).
	receivedAfter int64

	// resignalled remembers when this relay last signalled a RECEIVED
	// payment again, so that a payment its workflow is slow to record is
	// signalled once per ReceivedAge, not on every pass.
	resignalled map[string]time.Time
}

// Pass settles the RECEIVED payments left over, starts the refunds due and
// returns how many it started.
func (r *Refunds) Pass(ctx context.Context) (int, error) {
	if err := r.settleReceived(ctx); err != nil {
		r.Log.Warn("refund relay: settling received payments failed", "error", err)
	}
	due, err := r.Store.DueRefunds(ctx, 200)
	if err != nil {
		return 0, err
	}
	lease := cmp.Or(r.Lease, DefaultRefundLease)
	n := 0
	for i := range due {
		p := &due[i]
		if claimed, err := r.Store.ClaimRefund(ctx, p.PaymentID, lease); err != nil {
			return n, err
		} else if !claimed {
			continue // another worker's relay took it
		}
		started, err := r.Starter.StartRefund(ctx, p)
		if err != nil {
			// Left claimed: tried again when the lease ends.
			r.count("failed")
			r.Log.Warn("refund relay: start failed", "payment_id", p.PaymentID, "trace_id", p.TraceID, "error", err)
			continue
		}
		if started {
			n++
			r.count("started")
			r.Log.Info("refund started", "payment_id", p.PaymentID, "order_no", p.OrderNo, "trace_id", p.TraceID)
		}
	}
	r.observe(ctx)
	return n, nil
}

// settleReceived applies the RECEIVED payments whose order's workflow is
// no longer running: the workflow can no longer record them.
func (r *Refunds) settleReceived(ctx context.Context) error {
	age := cmp.Or(r.ReceivedAge, DefaultReceivedAge)
	limit := cmp.Or(r.ReceivedBatch, DefaultReceivedBatch)
	received, next, err := r.Store.ReceivedPayments(ctx, age, r.receivedAfter, limit)
	if err != nil {
		return err
	}
	// The next pass goes on after this batch (back to the oldest once
	// the list is done): payments that cannot settle yet (no order row,
	// a workflow still running) are looked at again in their turn, never
	// in front of every newer one.
	r.receivedAfter = next
	for i := range received {
		p := &received[i]
		l := r.Log.With("payment_id", p.PaymentID, "order_no", p.OrderNo, "trace_id", p.TraceID)
		running, err := r.Starter.Running(ctx, p.OrderNo)
		if err != nil {
			l.Warn("refund relay: cannot tell whether the order's workflow runs", "error", err)
			continue
		}
		if running {
			// The workflow records it, if the signal reached it: the
			// webhook may have answered 503 after writing RECEIVED, and a
			// provider may give up redelivering. Signal it again (applying
			// a payment twice changes nothing), lest the order time out
			// and the money it already took be refunded.
			r.resignal(ctx, l, p, age)
			continue
		}
		outcome, o, err := r.Store.ApplyPayment(ctx, p)
		if seckill.ErrorCode(err) == seckill.ENOTFOUND {
			// No order row yet: its workflow has not created it. The
			// payment stays RECEIVED, listed by `seckill refunds`.
			continue
		}
		if err != nil {
			r.count("failed")
			l.Error("refund relay: payment no workflow recorded could not be applied", "error", err)
			continue
		}
		r.count("settled")
		l.Warn("payment no workflow recorded: settled by the refund relay", "outcome", outcome, "status", o.Status)
		if r.Views != nil {
			if err := r.Views.PutOrder(ctx, o); err != nil {
				l.Warn("refund relay: order view not refreshed", "error", err)
			}
		}
	}
	return nil
}

// resignal signals a RECEIVED payment to its running workflow again, at
// most once per age.
func (r *Refunds) resignal(ctx context.Context, l *slog.Logger, p *seckill.Payment, age time.Duration) {
	now := time.Now()
	if r.resignalled == nil {
		r.resignalled = map[string]time.Time{}
	}
	for id, at := range r.resignalled {
		if now.Sub(at) > 10*age {
			delete(r.resignalled, id) // long recorded, or settled another way
		}
	}
	if at, ok := r.resignalled[p.PaymentID]; ok && now.Sub(at) < age {
		return
	}
	r.resignalled[p.PaymentID] = now
	if err := r.Starter.Pay(ctx, p); err != nil {
		l.Warn("refund relay: signalling a received payment again failed", "error", err)
		return
	}
	r.count("resignalled")
	l.Warn("payment still RECEIVED while its workflow runs: signalled again")
}

// observe refreshes the refunds-by-state gauge.
func (r *Refunds) observe(ctx context.Context) {
	if r.Metrics != nil {
		observeStates(ctx, r.Metrics.Refunds, r.Store.RefundCounts)
	}
}

func (r *Refunds) count(action string) {
	if r.Metrics != nil {
		r.Metrics.RelayActions.WithLabelValues("refunds", action).Inc()
	}
}

// Run makes a pass every interval until ctx ends.
func (r *Refunds) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		if _, err := r.Pass(ctx); err != nil {
			r.Log.Warn("refund relay pass failed", "error", err)
		}
	})
}
