package redis

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill"
)

// Concurrent admissions of one session are coalesced into one script call
// (group commit, as databases batch fsyncs): while a call is in flight, the
// attempts that arrive queue up and go together in the next one. An idle
// gate adds no wait (a lone attempt goes at once); a busy one pays one round
// trip per batch instead of one per attempt. The script decides each
// attempt in arrival order exactly as if it ran alone.

// maxAdmitBatch bounds one script call (Redis runs it without interruption).
const maxAdmitBatch = 256

type admitCall struct {
	ctx  context.Context
	a    *seckill.Attempt
	done chan admitResult
}

type coalescer struct {
	g         *Gate
	sessionID int64
	mu        sync.Mutex
	queue     []*admitCall
	busy      bool
}

func (g *Gate) coalescerFor(sessionID int64) *coalescer {
	if c, ok := g.coalescers.Load(sessionID); ok {
		return c.(*coalescer)
	}
	c, _ := g.coalescers.LoadOrStore(sessionID, &coalescer{g: g, sessionID: sessionID})
	return c.(*coalescer)
}

// submit queues one attempt and waits for its result.
func (c *coalescer) submit(ctx context.Context, call *admitCall) admitResult {
	c.mu.Lock()
	c.queue = append(c.queue, call)
	if !c.busy {
		c.busy = true
		go c.drain()
	}
	c.mu.Unlock()
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

// drain sends the queue in batches until it is empty.
func (c *coalescer) drain() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		n := min(len(c.queue), maxAdmitBatch)
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.run(batch)
	}
}

func (c *coalescer) run(batch []*admitCall) {
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
	// Not the callers' contexts: a batch serves many callers. Its script
	// call is a span of its first caller's trace.
	ctx, cancel := context.WithTimeout(trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(live[0].ctx)), admitBudget)
	defer cancel()
	attempts := make([]*seckill.Attempt, len(live))
	for i, call := range live {
		attempts[i] = call.a
	}
	res, err := c.g.runAdmit(ctx, c.sessionID, attempts)
	for i, call := range live {
		if err != nil {
			call.done <- admitResult{err: err}
			continue
		}
		call.done <- res[i]
	}
}
