// Package storetest holds in-memory fakes of the stores the order
// activities run against — MemStore for MySQL (activities.Store) and
// MemGate for Redis (activities.Gate) — with fault injection, and the
// contract both the fakes and the real adapters pass: TestStore and
// TestGate run the same cases against mysql.DB and redis.Gate (in those
// packages' tests, on the real services) and against the fakes (here), so
// the fakes the workflow tests trust cannot drift from what they fake.
// MemStore keeps operators' named tokens too, and TestOperatorStore holds
// it and mysql.DB to the same rules, for the admin API's tests.
package storetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/seckill/seckill"
)

// Call names a call of a fake that faults and hooks can target.
type Call string

// The calls of the fakes.
const (
	CreateOrder  Call = "store.CreateOrder"
	CloseOrder   Call = "store.CloseOrder"
	ApplyPayment Call = "store.ApplyPayment"
	ReadOrder    Call = "store.Order"
	Release      Call = "gate.Release"
	PutOrder     Call = "gate.PutOrder"
)

// Fault makes one call of a fake fail: before its effect (the database was
// down), or after it (the commit happened but the answer never reached the
// caller: what an activity timeout looks like to the workflow).
type Fault struct {
	Err         error
	AfterCommit bool
}

// Transient is a dependency outage: the call fails before its effect.
func Transient() Fault {
	return Fault{Err: seckill.Errorf(seckill.EUNAVAILABLE, "injected: dependency unavailable")}
}

// LostResponse is a call that committed and whose answer was lost.
func LostResponse() Fault {
	return Fault{Err: fmt.Errorf("injected: response lost after commit: %w", context.DeadlineExceeded), AfterCommit: true}
}

// Times returns n copies of f.
func Times(n int, f Fault) []Fault {
	out := make([]Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// Hooks run inside a fake call (on the caller's goroutine, an activity's in
// the workflow tests): Before its effect and After it. call counts from 1.
type Hooks struct {
	Before, After func(call int)
}

// Injector counts the calls of the fakes and applies the faults and hooks
// planned for them. A nil *Injector injects nothing.
type Injector struct {
	mu     sync.Mutex
	calls  map[Call]int
	done   map[Call]int
	plans  map[Call][]Fault
	sticky map[Call]Fault
	hooks  map[Call]Hooks
}

// NewInjector returns an Injector with nothing planned.
func NewInjector() *Injector {
	return &Injector{calls: map[Call]int{}, done: map[Call]int{}, plans: map[Call][]Fault{},
		sticky: map[Call]Fault{}, hooks: map[Call]Hooks{}}
}

// FailNext makes the next len(fs) calls of c fail, one fault each.
func (in *Injector) FailNext(c Call, fs ...Fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.plans[c] = append(in.plans[c], fs...)
}

// FailAlways makes every call of c fail until Heal.
func (in *Injector) FailAlways(c Call, f Fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sticky[c] = f
}

// Heal drops every fault planned for c.
func (in *Injector) Heal(c Call) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.sticky, c)
	delete(in.plans, c)
}

// On runs h in every call of c.
func (in *Injector) On(c Call, h Hooks) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.hooks[c] = h
}

// Count is how many calls of c started.
func (in *Injector) Count(c Call) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.calls[c]
}

// Finished is how many calls of c returned.
func (in *Injector) Finished(c Call) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.done[c]
}

func (in *Injector) enter(c Call) (int, Fault, Hooks) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.calls[c]++
	f, ok := in.sticky[c]
	if !ok && len(in.plans[c]) > 0 {
		f, in.plans[c] = in.plans[c][0], in.plans[c][1:]
	}
	return in.calls[c], f, in.hooks[c]
}

func (in *Injector) exit(c Call) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.done[c]++
}

// step runs body as one call of c with its fault and hooks applied. Hooks
// run outside every lock, so they may block or call into the test
// environment.
func step[T any](in *Injector, c Call, body func() (T, error)) (T, error) {
	if in == nil {
		return body()
	}
	call, f, h := in.enter(c)
	defer in.exit(c)
	var zero T
	if h.Before != nil {
		h.Before(call)
	}
	if f.Err != nil && !f.AfterCommit {
		return zero, f.Err
	}
	v, err := body()
	if err != nil {
		return zero, err
	}
	if h.After != nil {
		h.After(call)
	}
	if f.Err != nil {
		return zero, f.Err
	}
	return v, nil
}
