package relay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/signature"
	"github.com/seckill/seckill/tracing"
)

// EventStore is the MySQL side of the events relay (MySQL is the outbox:
// every status change writes its event in its own transaction).
type EventStore interface {
	SequenceEvents(ctx context.Context, limit int) (int, error)
	DueEvents(ctx context.Context, limit int) ([]seckill.Event, error)
	ClaimEvent(ctx context.Context, eventID string, lease time.Duration) (bool, error)
	MarkEventDelivered(ctx context.Context, eventID string) error
	RecordEventFailure(ctx context.Context, eventID, reason string, policy seckill.Retry) (*seckill.EventState, error)
	EventCounts(ctx context.Context) (map[string]int, error)
	LetUnsentEventsGo(ctx context.Context, before time.Time, limit int) (int, error)
}

// Defaults of the events relay.
const (
	// DefaultEventTimeout bounds one delivery (the receiver's answer).
	DefaultEventTimeout = 10 * time.Second
	// DefaultEventLease is how long a claimed event is left to the relay
	// sending it: well past DefaultEventTimeout, so that another relay
	// sends it again only when this one's send was lost, never while it
	// is still in flight.
	DefaultEventLease = time.Minute
	// DefaultEventConcurrency bounds the deliveries in flight per relay.
	DefaultEventConcurrency = 8
)

// Events sequences the order events into the feed and, with a URL,
// delivers them to it as signed webhooks (docs/events.md): at least once,
// in order per order (only the first undelivered event of an order is
// ever due), the heads of different orders concurrently, so one order
// whose event keeps failing holds back only its own later events. A
// failed delivery waits its backoff; after Retry.Attempts failures the
// event is parked until `seckill events retry`. Each event is claimed with
// a lease before it is sent, so relays of several workers never send one
// event at the same time. Nothing here runs in an order's workflow: a slow
// or dead receiver never slows a sale.
type Events struct {
	Store EventStore
	// URL receives the events; empty: they are sequenced (the feed works)
	// but not sent, and let go of after UnsentRetention.
	URL string
	// UnsentRetention is how long, without a URL, an event waits for one
	// (a URL set later gets the events this young, oldest first); older
	// ones are let go, so the push's backlog stays bounded. They stay in
	// the feed. Zero: they wait for a URL however long.
	UnsentRetention time.Duration
	// Secret signs each delivery (Seckill-Signature); required with URL.
	Secret []byte
	// Retry is the backoff and parking of failed deliveries; zero means
	// seckill.EventRetry(seckill.DefaultEventAttempts).
	Retry seckill.Retry
	// Timeout, Lease and Concurrency default to DefaultEventTimeout,
	// DefaultEventLease and DefaultEventConcurrency.
	Timeout     time.Duration
	Lease       time.Duration
	Concurrency int
	// Transport sends the webhooks; http.DefaultTransport when nil.
	// Timeout bounds each request either way.
	Transport http.RoundTripper
	Log       *slog.Logger
	// Metrics counts deliveries and the undelivered events; optional.
	Metrics *metrics.Metrics
}

// sequenceBatch is how many events one sequencing step takes; a pass
// repeats it while it fills up, at most maxSequenceSteps times.
const (
	sequenceBatch    = 500
	maxSequenceSteps = 20
)

// Pass sequences the events that became visible, then delivers the due
// ones and returns how many the receiver took.
func (r *Events) Pass(ctx context.Context) (int, error) {
	for range maxSequenceSteps {
		n, err := r.Store.SequenceEvents(ctx, sequenceBatch)
		if err != nil {
			return 0, err
		}
		if n < sequenceBatch {
			break
		}
	}
	if r.URL == "" {
		r.letUnsentGo(ctx)
		return 0, nil // nothing is sent, so nothing counts as waiting
	}
	due, err := r.Store.DueEvents(ctx, 200)
	if err != nil {
		return 0, err
	}
	lease := cmp.Or(r.Lease, DefaultEventLease)
	concurrency := cmp.Or(r.Concurrency, DefaultEventConcurrency)
	slots := make(chan struct{}, concurrency)
	var mu sync.Mutex
	var wg sync.WaitGroup
	delivered := 0
	for i := range due {
		ev := &due[i]
		if claimed, err := r.Store.ClaimEvent(ctx, ev.ID, lease); err != nil {
			wg.Wait()
			return delivered, err
		} else if !claimed {
			continue // another worker's relay took it
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if r.deliver(ctx, ev) {
				mu.Lock()
				delivered++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.observe(ctx)
	return delivered, nil
}

// letUnsentBatch is how many events one pass lets go.
const letUnsentBatch = 1000

// letUnsentGo lets the events go that waited for a URL longer than
// UnsentRetention.
func (r *Events) letUnsentGo(ctx context.Context) {
	if r.UnsentRetention <= 0 {
		return
	}
	n, err := r.Store.LetUnsentEventsGo(ctx, time.Now().Add(-r.UnsentRetention), letUnsentBatch)
	if err != nil {
		r.Log.Warn("events relay: letting unsent events go failed", "error", err)
	} else if n > 0 {
		r.Log.Info("events relay: events not sent (no SECKILL_EVENTS_URL) let go; the feed keeps them",
			"events", n, "retention", r.UnsentRetention)
	}
}

// deliver sends one claimed event and records the outcome; true when the
// receiver took it.
func (r *Events) deliver(ctx context.Context, ev *seckill.Event) bool {
	l := r.Log.With("event_id", ev.ID, "type", ev.Type, "order_no", ev.OrderNo)
	err := r.send(ctx, ev)
	if err == nil {
		if err := r.Store.MarkEventDelivered(ctx, ev.ID); err != nil {
			// Sent again when the lease ends: at least once.
			l.Warn("events relay: delivery not recorded", "error", err)
			return false
		}
		if r.Metrics != nil {
			r.Metrics.EventsDelivered.Inc()
		}
		return true
	}
	policy := r.Retry
	if policy == (seckill.Retry{}) {
		policy = seckill.EventRetry(seckill.DefaultEventAttempts)
	}
	st, rerr := r.Store.RecordEventFailure(ctx, ev.ID, err.Error(), policy)
	if rerr != nil {
		l.Warn("events relay: failure not recorded; tried again when the lease ends", "error", rerr, "delivery_error", err)
		return false
	}
	switch st.State {
	case seckill.EventParked:
		l.Error("order event parked: the receiver refused it too often; its order's later events wait; `seckill events retry` once fixed",
			"attempts", st.Attempts, "last_error", st.LastError)
	default:
		l.Warn("order event not delivered; retried later", "attempts", st.Attempts, "next_attempt_at", st.NextAttemptAt, "error", err)
	}
	if r.Metrics != nil {
		r.Metrics.EventFailures.WithLabelValues(st.State).Inc()
	}
	return false
}

// send POSTs one event, signed, and wants a 2xx answer. The delivery is
// a span of the relay's own trace, linked to the order's (the purchase's):
// from an order's trace ops find what fulfilment was told, and when.
func (r *Events) send(ctx context.Context, ev *seckill.Event) (err error) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("seckill.event_id", ev.ID), attribute.String("seckill.event_type", string(ev.Type)))}
	if l, ok := tracing.LinkTo(ev.TraceID); ok {
		opts = append(opts, trace.WithLinks(l), trace.WithAttributes(attribute.String("seckill.order_no", ev.OrderNo)))
	}
	ctx, span := tracing.Tracer().Start(ctx, "send "+string(ev.Type), opts...)
	defer func() {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}()
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	timeout := cmp.Or(r.Timeout, DefaultEventTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(signature.Header, signature.Sign(r.Secret, time.Now(), body))
	resp, err := (&http.Client{Transport: r.Transport, CheckRedirect: signature.StayPut}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// A little of the answer says why; the rest is drained so the
	// connection is reused.
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if err := signature.Redirected(resp, "SECKILL_EVENTS_URL"); err != nil {
		return fmt.Errorf("receiver %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("receiver answered %d: %s", resp.StatusCode, bytes.TrimSpace(head))
	}
	return nil
}

// observe refreshes the undelivered-events gauge.
func (r *Events) observe(ctx context.Context) {
	if r.Metrics != nil {
		observeStates(ctx, r.Metrics.Events, r.Store.EventCounts)
	}
}

// Run makes a pass every interval until ctx ends.
func (r *Events) Run(ctx context.Context, interval time.Duration) {
	tick.Every(ctx, interval, func() {
		if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.Log.Warn("events relay pass failed", "error", err)
		}
	})
}
