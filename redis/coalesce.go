package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	s       *seckill.Session
	userID  int64
	qty     int
	orderNo string
	traceID string
	now     time.Time
	done    chan admitResult
}

type admitResult struct {
	code, left, mask int64
	err              error
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
		// The attempt may still run with its batch; its reservation then
		// has a pending-start entry, and the relay makes it an order that
		// closes unpaid. Report the failure: never claim it was refused.
		return admitResult{err: ctx.Err()}
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
	// Not the callers' contexts: a batch serves many callers.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	args := make([]any, 0, 1+6*len(batch))
	args = append(args, len(batch))
	for _, a := range batch {
		args = append(args, a.userID, a.qty, a.s.PerUserLimit, a.orderNo, a.now.UnixMilli(), a.traceID)
	}
	res, err := admitScript.Run(ctx, c.g.rdb, c.g.keys(c.sessionID).script(), args...).Int64Slice()
	if err == nil && len(res) != 3*len(batch) {
		err = fmt.Errorf("admit script returned %d values for %d attempts", len(res), len(batch))
	}
	for i, a := range batch {
		if err != nil {
			a.done <- admitResult{err: unavailable(err)}
			continue
		}
		a.done <- admitResult{code: res[3*i], left: res[3*i+1], mask: res[3*i+2]}
	}
}
