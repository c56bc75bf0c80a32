package mysql

import (
	"sync"
	"time"
)

// Group commit for the hot row (create.go and close.go use it).
//
// The session row is the hot row of a sale: every order's transaction
// takes its lock to move the stock and holds it through the commit's
// fsync, so one session creates (or closes) at most one order per fsync
// (docs/BENCHMARKS.md has the figures). The batchers are group
// commit at the application level: CreateOrder calls that arrive together
// for a session share one transaction, one conditional decrement of their
// summed quantity and one fsync; so do CloseOrder calls, with one
// increment. If a create batch as a whole does not fit in the stock, every
// order of it falls back to its own transaction, so the refusals are
// exact (any other failure goes back to every call, whose activity
// retries); a close batch that fails for any reason falls back to one
// transaction per order, so one order's trouble is never another's.

// batchWindow is how long the first order of a batch waits for company.
const batchWindow = 2 * time.Millisecond

// maxBatch bounds a batch (and the transaction's size).
const maxBatch = 128

// batcher groups calls per session and runs each group with run.
type batcher[C any] struct {
	run func(calls []C)
	mu  sync.Mutex
	// queues holds the calls waiting per session; a session with a queue
	// has a flusher goroutine on its way.
	queues map[int64][]C
}

func newBatcher[C any](run func(calls []C)) *batcher[C] {
	return &batcher[C]{run: run, queues: map[int64][]C{}}
}

// add queues a call of a session; run gets it within batchWindow, or at
// once when the batch is full.
func (b *batcher[C]) add(sessionID int64, call C) {
	b.mu.Lock()
	q := b.queues[sessionID]
	b.queues[sessionID] = append(q, call)
	full := len(q)+1 >= maxBatch
	first := len(q) == 0
	b.mu.Unlock()
	if first {
		go func() {
			time.Sleep(batchWindow)
			b.flush(sessionID)
		}()
	} else if full {
		go b.flush(sessionID)
	}
}

// flush runs the queued calls of a session in batches of at most maxBatch.
func (b *batcher[C]) flush(sessionID int64) {
	b.mu.Lock()
	calls := b.queues[sessionID]
	delete(b.queues, sessionID)
	b.mu.Unlock()
	for len(calls) > 0 {
		n := min(len(calls), maxBatch)
		b.run(calls[:n])
		calls = calls[n:]
	}
}

// batchTimeout bounds one batch's transaction.
const batchTimeout = 10 * time.Second
