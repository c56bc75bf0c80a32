package activities

import (
	"context"

	"go.temporal.io/sdk/log"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/metrics"
)

// RefundStore is the MySQL side of refunds.
type RefundStore interface {
	MarkRefunded(ctx context.Context, paymentID, refundID string) (seckill.Status, error)
	RecordRefundFailure(ctx context.Context, paymentID, reason string, policy seckill.RefundRetry) (*seckill.RefundState, error)
	Order(ctx context.Context, orderNo string) (*seckill.Order, error)
}

// Refunder is the payment provider's side of a refund
// (seckill.PaymentProvider.Refund): idempotent on the payment id.
type Refunder interface {
	Refund(ctx context.Context, r seckill.Refund) (refundID string, err error)
}

// Refunds holds the dependencies of the refund steps.
type Refunds struct {
	Store    RefundStore
	Provider Refunder
	Gate     Gate
	// Retry is the backoff and parking of failed refunds; zero means
	// seckill.DefaultRefundRetry.
	Retry seckill.RefundRetry
	// Metrics counts failed refund runs; optional.
	Metrics *metrics.Metrics
}

// RefundPayment asks the provider to give the payment back; idempotent on
// the payment id.
func (a *Refunds) RefundPayment(ctx context.Context, r seckill.Refund) (string, error) {
	l := refundLogger(ctx, r)
	id, err := a.Provider.Refund(ctx, r)
	if err != nil {
		return "", failed(l, "refund at the provider", err)
	}
	l.Info("refunded at the provider", "refund_id", id, "amount_cents", r.AmountCents)
	return id, nil
}

// MarkRefunded records the refund and refreshes the order's cached view.
// A refunded order holds no units: its Redis reservation is given back
// here too (exactly once by the release script's guard). The operator's
// refund releases it at once; this is for the refund whose API call
// stopped between MySQL and Redis and was never retried. A late payment's
// order was released by its close already (0 units).
func (a *Refunds) MarkRefunded(ctx context.Context, r seckill.Refund, refundID string) (seckill.Status, error) {
	l := refundLogger(ctx, r)
	st, err := a.Store.MarkRefunded(ctx, r.PaymentID, refundID)
	if err != nil {
		return "", failed(l, "record refund", err)
	}
	o, err := a.Store.Order(ctx, r.OrderNo)
	if err != nil {
		return "", failed(l, "read order", err)
	}
	if o.Status == seckill.StatusRefundPending || o.Status == seckill.StatusRefunded {
		if _, err := a.Gate.Release(ctx, o.SessionID, o.OrderNo); err != nil {
			return "", failed(l, "release reservation", err)
		}
	}
	if err := a.Gate.PutOrder(ctx, o); err != nil {
		return "", failed(l, "publish order view", err)
	}
	return st, nil
}

// RecordRefundFailure counts a refund run whose provider call failed: the
// next run waits its backoff, or the refund is parked for ops.
func (a *Refunds) RecordRefundFailure(ctx context.Context, in RefundFailure) (seckill.RefundState, error) {
	l := refundLogger(ctx, in.Refund)
	policy := a.Retry
	if policy == (seckill.RefundRetry{}) {
		policy = seckill.DefaultRefundRetry
	}
	st, err := a.Store.RecordRefundFailure(ctx, in.Refund.PaymentID, in.Error, policy)
	if err != nil {
		return seckill.RefundState{}, failed(l, "record refund failure", err)
	}
	switch st.State {
	case seckill.RefundParked:
		l.Error("refund parked: the provider refused it too often; `seckill refunds retry` once fixed",
			"attempts", st.Attempts, "last_error", st.LastError)
	case seckill.RefundDue:
		l.Warn("refund failed at the provider; retried later", "attempts", st.Attempts,
			"next_attempt_at", st.NextAttemptAt, "last_error", st.LastError)
	default:
		return *st, nil // refunded meanwhile: not a failure
	}
	if a.Metrics != nil {
		a.Metrics.RefundFailures.WithLabelValues(st.State).Inc()
	}
	return *st, nil
}

func refundLogger(ctx context.Context, r seckill.Refund) log.Logger {
	return log.With(logger(ctx, r.OrderNo, r.TraceID), "payment_id", r.PaymentID)
}
