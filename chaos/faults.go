package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seckill/seckill/internal/toxi"
)

// Fault kinds, as the report counts them.
const (
	KillAPI      = "kill api"
	KillWorker   = "kill worker"
	KillTemporal = "kill temporal"
	Latency      = "latency above timeout"
	Stall        = "stall"
	Reset        = "connection reset"
	SlowMySQL    = "slow mysql"
	Down         = "link down"
)

// Kinds lists every fault kind chaos injects.
var Kinds = []string{KillAPI, KillWorker, KillTemporal, Latency, Stall, Reset, SlowMySQL, Down}

// injector picks faults at random (from a seeded source: the same seed
// draws the same faults in the same order) and applies them one at a
// time: apply, hold a few seconds, heal, pause.
type injector struct {
	s     *stack
	rng   *rand.Rand
	log   func(format string, args ...any)
	count map[string]int
	// burst is signalled when a sale's burst is in flight: the next fault
	// comes at once instead of after its pause, so that faults meet
	// purchases (a burst is a few seconds of a sale).
	burst chan struct{}
}

// bursting tells the injector a burst is in flight (never blocks).
func (in *injector) bursting() {
	select {
	case in.burst <- struct{}{}:
	default:
	}
}

// between returns a random duration in [lo, hi).
func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int64N(int64(hi-lo)))
}

// link picks one of the six links (API or worker × Redis, MySQL, Temporal).
func (in *injector) link() *toxi.Link {
	all := append(in.s.apiLinks.all(), in.s.wrkLinks.all()...)
	return all[in.rng.IntN(len(all))]
}

// run injects faults until ctx ends, then heals the stack.
func (in *injector) run(ctx context.Context) {
	defer in.s.heal()
	for {
		burst := false
		select {
		case <-ctx.Done():
			return
		case <-time.After(in.between(500*time.Millisecond, 3*time.Second)):
		case <-in.burst:
			burst = true
		}
		kind, link := Kinds[in.rng.IntN(len(Kinds))], in.link()
		if burst {
			// A burst is in flight: break what admission needs (the API
			// process, or its Redis), so purchases meet undecided answers.
			kind = burstKinds[in.rng.IntN(len(burstKinds))]
			link = in.s.apiLinks.redis
		}
		hold := in.between(time.Second, 3*time.Second)
		heal, what, err := in.apply(kind, link)
		if err != nil {
			in.log("fault %s: %v", kind, err)
			continue
		}
		in.count[kind]++
		when := ""
		if burst {
			when = " (burst in flight)"
		}
		in.log("fault: %s for %s%s", what, hold.Round(100*time.Millisecond), when)
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
		heal()
	}
}

// burstKinds are the faults that meet a burst: what admission needs.
var burstKinds = []string{KillAPI, Latency, Stall, Reset, Down}

// apply starts one fault (a toxic on link, for the kinds that take one)
// and returns what heals it.
func (in *injector) apply(kind string, l *toxi.Link) (heal func(), what string, err error) {
	switch kind {
	case KillAPI, KillWorker, KillTemporal:
		p := map[string]*proc{KillAPI: in.s.api, KillWorker: in.s.worker, KillTemporal: in.s.temporal}[kind]
		p.kill(true)
		// SIGKILL, down for the hold, then the supervisor starts it again.
		return p.release, "SIGKILL " + p.name, nil
	case Latency:
		// Above every client timeout that matters: Redis reads (500 ms),
		// the API's start wait (300 ms).
		d := in.between(600*time.Millisecond, 1500*time.Millisecond)
		undo, err := l.Latency(d, d/5)
		return undo, fmt.Sprintf("%s latency %s", l.Name, d.Round(time.Millisecond)), err
	case Stall:
		undo, err := l.Stall()
		return undo, l.Name + " stalls", err
	case Reset:
		undo, err := l.ResetPeer(0)
		return undo, l.Name + " resets every connection", err
	case SlowMySQL:
		l := in.s.wrkLinks.mysql
		if in.rng.IntN(2) == 0 {
			l = in.s.apiLinks.mysql
		}
		d := in.between(time.Second, 2*time.Second)
		undo, err := l.Latency(d, d/5)
		return undo, fmt.Sprintf("%s takes %s per statement", l.Name, d.Round(time.Millisecond)), err
	case Down:
		if err := l.SetDown(true); err != nil {
			return nil, "", err
		}
		return func() { _ = l.SetDown(false) }, l.Name + " down", nil
	}
	return nil, "", fmt.Errorf("unknown fault %q", kind)
}

// newRand is the injector's random source: PCG seeded with seed, so a
// failing soak can be replayed fault for fault (the timing of the sales
// around them still varies).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }
