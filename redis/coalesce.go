package redis

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
)

// Concurrent calls of one kind are coalesced into one round trip (group
// commit, as databases batch fsyncs): while a batch is in flight, the calls
// that arrive queue up and go together in the next one. An idle client adds
// no wait (a lone call goes at once); a busy one pays one round trip per
// batch instead of one per call. The admissions of one session share one
// script call, whose script decides each attempt in arrival order exactly
// as if it ran alone; the rate limiter's calls share one pipeline.

// maxBatch bounds one batch (Redis runs a script without interruption).
const maxBatch = 256

// batcher sends its calls in batches, at most one batch in flight.
type batcher[C any] struct {
	run   func([]C)
	mu    sync.Mutex
	queue []C
	busy  bool
}

// add queues a call; the caller waits for run to answer it.
func (b *batcher[C]) add(call C) {
	b.mu.Lock()
	b.queue = append(b.queue, call)
	if !b.busy {
		b.busy = true
		go b.drain()
	}
	b.mu.Unlock()
}

// drain runs the queue in batches until it is empty.
func (b *batcher[C]) drain() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.run(batch)
	}
}

// batchContext is the context of a batch that serves many callers: not
// theirs (one caller's end must not fail the others), bounded by budget,
// and a span of its first caller's trace.
func batchContext(first context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(first)), budget)
}

type admitCall struct {
	ctx  context.Context
	a    *seckill.Attempt
	done chan admitResult
}

func (g *Gate) coalescerFor(sessionID int64) *batcher[*admitCall] {
	if c, ok := g.coalescers.Load(sessionID); ok {
		return c.(*batcher[*admitCall])
	}
	c, _ := g.coalescers.LoadOrStore(sessionID, &batcher[*admitCall]{run: func(batch []*admitCall) { g.admitBatch(sessionID, batch) }})
	return c.(*batcher[*admitCall])
}

// submit runs one attempt with the session's other attempts.
func (g *Gate) submit(ctx context.Context, call *admitCall) admitResult {
	g.coalescerFor(call.a.Session.ID).add(call)
	select {
	case r := <-call.done:
		return r
	case <-ctx.Done():
		// The attempt may still run with its batch (unless the batch sees
		// the caller gone first and leaves it out); its reservation then
		// has a pending-start entry, and the relay makes it an order. The
		// outcome is unknown: never claim it was refused.
		return admitResult{err: unknownOutcome(ctx.Err())}
	}
}

func (g *Gate) admitBatch(sessionID int64, batch []*admitCall) {
	// Callers that gave up while queued are left out: their attempt then
	// certainly did not run, and a retry with the same key runs afresh.
	live := batch[:0:0]
	for _, call := range batch {
		if call.ctx.Err() == nil {
			live = append(live, call)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live[0].ctx, admitBudget)
	defer cancel()
	attempts := make([]*seckill.Attempt, len(live))
	for i, call := range live {
		attempts[i] = call.a
	}
	res, err := g.runAdmit(ctx, sessionID, attempts)
	for i, call := range live {
		if err != nil {
			call.done <- admitResult{err: err}
			continue
		}
		call.done <- res[i]
	}
}
