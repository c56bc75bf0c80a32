package temporal

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/spantest"
)

// A payment's signal-with-start is a step of the purchase's trace (under
// the span its reservation recorded), linked to the webhook's span; a
// reservation that names no trace leaves it in the webhook's.
func TestPayStartContinuesThePurchase(t *testing.T) {
	rec := spantest.Record(t)
	webhookCtx, webhook := otel.Tracer("test").Start(context.Background(), "POST /api/v1/payments/webhook")
	defer webhook.End()

	const purchase, purchaseSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: "1-x", TraceID: purchase, SpanID: purchaseSpan}}
	_, span := payStartContext(webhookCtx, req)
	span.End()
	got := rec.Ended()[0]
	require.Equal(t, "PayWithStart", got.Name())
	require.Equal(t, purchase, got.SpanContext().TraceID().String(), "in the purchase's trace")
	require.Equal(t, purchaseSpan, got.Parent().SpanID().String(), "under the purchase's span")
	require.True(t, got.SpanContext().IsSampled(), "traced, as its purchase was")
	require.Len(t, got.Links(), 1)
	require.Equal(t, webhook.SpanContext(), got.Links()[0].SpanContext, "linked to the webhook's span")

	old := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: "1-y", TraceID: "req-before-tracing"}}
	_, span = payStartContext(webhookCtx, old)
	span.End()
	got = rec.Ended()[1]
	require.Equal(t, webhook.SpanContext().TraceID(), got.SpanContext().TraceID(), "no purchase trace: the webhook's")
	require.Equal(t, webhook.SpanContext().SpanID(), got.Parent().SpanID())
}
