package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
)

// RefundStore lists the payments waiting for their refund (MySQL is the
// outbox here: ApplyPayment writes REFUND_PENDING in its transaction).
type RefundStore interface {
	PendingRefunds(ctx context.Context, limit int) ([]seckill.Refund, error)
}

// RefundStarter starts a payment's refund workflow; started is false when
// it existed.
type RefundStarter interface {
	StartRefund(ctx context.Context, r *seckill.Refund) (started bool, err error)
}

// Refunds starts a refund workflow (refund:<payment_id>) for every payment
// waiting for one, whichever path recorded it: the order workflow (a
// payment during or after the close) or the API (a payment after the
// workflow ended).
type Refunds struct {
	Store   RefundStore
	Starter RefundStarter
	Log     *slog.Logger
	// Metrics counts the refunds started and failed; optional.
	Metrics *metrics.Metrics
}

// Pass starts the refunds not started yet and returns how many it started.
func (r *Refunds) Pass(ctx context.Context) (int, error) {
	pending, err := r.Store.PendingRefunds(ctx, 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range pending {
		started, err := r.Starter.StartRefund(ctx, &pending[i])
		if err != nil {
			r.count("failed")
			r.Log.Warn("refund relay: start failed", "payment_id", pending[i].PaymentID, "trace_id", pending[i].TraceID, "error", err)
			continue
		}
		if started {
			n++
			r.count("started")
			r.Log.Info("refund started", "payment_id", pending[i].PaymentID, "order_no", pending[i].OrderNo, "trace_id", pending[i].TraceID)
		}
	}
	return n, nil
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
