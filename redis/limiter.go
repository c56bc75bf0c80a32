package redis

import (
	"context"
	"errors"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Limiter is the distributed rate limiter (GCRA, limit.lua) shared by
// every API process: per-user and per-IP limits hold across the fleet.
// Concurrent calls share one pipeline (a batcher): a burst's admissions
// pay one round trip per batch for their limits, as for their script; a
// round trip per call had made the limit cost more than the coalesced
// script it guards (BenchmarkAdmitLimited). Each key still runs its own
// script: a pipeline may span a cluster's nodes, a script may not.
type Limiter struct {
	// Coalesce batches concurrent calls (NewLimiter turns it on); off,
	// each call is a round trip of its own.
	Coalesce bool
	rdb      goredis.UniversalClient
	prefix   string
	batcher  batcher[*limitCall]
}

// limitBudget bounds one batch's round trip.
const limitBudget = time.Second

type limitCall struct {
	ctx  context.Context
	key  string
	rate int
	// wait is the script's answer (0: allowed), or err.
	wait time.Duration
	err  error
	done chan struct{}
}

// NewLimiter returns a limiter whose keys start with prefix.
func NewLimiter(rdb goredis.UniversalClient, prefix string) *Limiter {
	l := &Limiter{Coalesce: true, rdb: rdb, prefix: prefix + ":limit:"}
	l.batcher.run = l.run
	return l
}

// Allow takes one request from key's budget of perSecond requests a second
// (bursts up to one second's worth). When refused, retryAfter says when the
// next request would pass. A Redis failure is an error, never a pass.
// Never retried: the script takes a token each time it runs, so a run
// whose reply was lost has already counted (the client answers 503).
func (l *Limiter) Allow(ctx context.Context, key string, perSecond int) (bool, time.Duration, error) {
	call := &limitCall{ctx: ctx, key: l.prefix + key, rate: perSecond, done: make(chan struct{})}
	if !l.Coalesce {
		l.run([]*limitCall{call})
	} else {
		l.batcher.add(call)
	}
	select {
	case <-call.done:
	case <-ctx.Done():
		return false, 0, unavailable(ctx.Err())
	}
	if call.err != nil {
		return false, 0, unavailable(call.err)
	}
	return call.wait == 0, call.wait, nil
}

// run sends a batch's scripts in one pipeline. A script Redis does not hold
// (NOSCRIPT: it restarted, or a replica was promoted) did not run, and is
// sent again with its source.
func (l *Limiter) run(batch []*limitCall) {
	live := batch[:0:0]
	for _, call := range batch {
		if call.ctx.Err() == nil {
			live = append(live, call)
		} else {
			call.err = call.ctx.Err() // left out: it did not run
			close(call.done)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := batchContext(live[0].ctx, limitBudget)
	defer cancel()
	cmds := make([]*goredis.Cmd, len(live))
	l.send(ctx, live, cmds, limitScript.EvalSha, func(int) bool { return true })
	l.send(ctx, live, cmds, limitScript.Eval, func(i int) bool { return noScript(cmds[i].Err()) })
	for i, call := range live {
		us, err := cmds[i].Int64()
		call.wait, call.err = time.Duration(us)*time.Microsecond, err
		close(call.done)
	}
}

// send runs, in one pipeline, eval of the calls that pick picks, into
// their cmds. Each command's error is its own.
func (l *Limiter) send(ctx context.Context, calls []*limitCall, cmds []*goredis.Cmd,
	eval func(context.Context, goredis.Scripter, []string, ...any) *goredis.Cmd, pick func(int) bool) {
	pipe := l.rdb.Pipeline()
	for i, call := range calls {
		if pick(i) {
			cmds[i] = eval(ctx, pipe, []string{call.key}, call.rate)
		}
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx)
	}
}

func noScript(err error) bool { return goredis.HasErrorPrefix(err, "NOSCRIPT") }

// ConsumeTicket marks a purchase ticket's nonce used by owner (one
// purchase attempt: the user's Idempotency-Key, or the request's trace id)
// and returns false when another owner used it before. The same owner may
// present it again: a SET whose reply was lost and is sent again, or the
// retry of the same purchase, must not find its own ticket "used". The mark
// lives as long as the ticket could.
func (g *Gate) ConsumeTicket(ctx context.Context, sessionID int64, nonce, owner string, ttl time.Duration) (bool, error) {
	key := g.keys(sessionID).base + "ticket:" + nonce
	prev, err := idempotent(ctx, func(ctx context.Context) (string, error) {
		return g.rdb.SetArgs(ctx, key, owner, goredis.SetArgs{Mode: "NX", Get: true, TTL: ttl}).Result()
	})
	if errors.Is(err, goredis.Nil) {
		return true, nil // it was fresh: now ours
	} else if err != nil {
		return false, unavailable(err)
	}
	return prev == owner, nil
}
