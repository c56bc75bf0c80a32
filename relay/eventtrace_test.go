package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/spantest"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
)

// An order event's delivery is a span linked to the purchase's trace:
// from the order's trace, ops find what fulfilment was told.
func TestEventDeliveryLinksToThePurchasesTrace(t *testing.T) {
	rec := spantest.Record(t)

	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 700)
	_, srv := newReceiver(t)
	const purchase = "0af7651916cd43dd8448eb211c80319c"
	no := fmt.Sprintf("%d-traced", sess.ID)
	req := &seckill.OrderRequest{Reservation: seckill.Reservation{OrderNo: no, SessionID: sess.ID, UserID: 7,
		Quantity: 1, Slots: []int{1}, ReservedAt: time.Now().UTC(), TraceID: purchase, SKUID: sess.SKUID}, PriceCents: sess.PriceCents}
	_, err := e.DB.CreateOrder(context.Background(), req, time.Now().Add(time.Minute))
	require.NoError(t, err)
	n, err := eventsRelay(e, srv.URL, metrics.New()).Pass(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	var sent sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "send "+string(seckill.EventOrderCreated) {
			sent = s
		}
	}
	require.NotNil(t, sent, "the delivery is a span")
	require.Equal(t, trace.SpanKindProducer, sent.SpanKind())
	require.Len(t, sent.Links(), 1)
	require.Equal(t, purchase, sent.Links()[0].SpanContext.TraceID().String(), "linked to the purchase's trace")
	require.NotEqual(t, purchase, sent.SpanContext().TraceID().String(), "a trace of the relay's own")
	e.RequireInvariants(sess.ID)
}
