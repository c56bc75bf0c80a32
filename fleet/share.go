// Package fleet is this API process's share of the global rate limit. The
// live API processes of one deployment are a fleet; with one, the global
// limit is the fleet's budget, split evenly among the processes that are
// up: adding an API behind the balancer does not raise what the fleet lets
// through to Redis, and the survivors of a crash take the dead one's share
// once its heartbeat lapses. The split is even because the balancer
// spreads requests evenly (round robin); a process that got more than its
// share refuses the excess with 429, as one process would.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/seckill/seckill/internal/tick"
	"github.com/seckill/seckill/metrics"
)

// Members are the heartbeats of the fleet's processes, shared by all of
// them (redis.Fleet).
type Members interface {
	// Beat says member is alive for ttl more and returns how many members
	// are alive, itself included.
	Beat(ctx context.Context, member string, ttl time.Duration) (int, error)
	// Leave takes member out at once.
	Leave(ctx context.Context, member string) error
}

const (
	// beatEvery is how often a process renews its heartbeat and re-reads
	// the fleet's size; beatTTL how long a heartbeat lasts: three missed
	// beats before the others count a process gone.
	beatEvery = time.Second
	beatTTL   = 3 * time.Second
)

// Share is the global token bucket, in this process's memory so that it
// holds even when Redis is gone: the fleet's budget split among the live
// processes when there are Members, this process's alone otherwise.
type Share struct {
	budget  int
	bucket  *rate.Limiter
	members Members
	metrics *metrics.Metrics
	log     *slog.Logger
	// member is this process's name in the fleet; down is whether its
	// last heartbeat failed (logged once per outage); left is set by
	// Leave, after which no heartbeat is sent.
	member string
	mu     sync.Mutex
	down   bool
	left   bool
}

// NewShare is the bucket of a budget of requests per second; nil (no
// global limit) when budget is not positive. members may be nil: then the
// budget is this process's alone.
func NewShare(budget int, members Members, m *metrics.Metrics, log *slog.Logger) *Share {
	if budget <= 0 {
		return nil
	}
	s := &Share{budget: budget, bucket: rate.NewLimiter(rate.Limit(budget), budget), members: members,
		metrics: m, log: log, member: memberName()}
	s.set(1)
	return s
}

// Allow takes a token from this process's share.
func (s *Share) Allow() bool { return s.bucket.Allow() }

// Start sends the first heartbeat, so the share is the fleet's before the
// API serves, then one every second until ctx ends (without Members,
// nothing).
func (s *Share) Start(ctx context.Context) {
	if s.members == nil {
		return
	}
	s.beat(ctx)
	go tick.Every(ctx, beatEvery, func() { s.beat(ctx) })
}

// memberName names this process in the fleet: host and pid for the
// operator, random bytes so that two processes never share a name.
func memberName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// beat renews this process's heartbeat and sets its share of the budget.
// When Redis does not answer, the last share stays: the limit still holds
// without Redis, at the size the fleet last had.
func (s *Share) beat(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.left {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, beatEvery)
	defer cancel()
	n, err := s.members.Beat(ctx, s.member, beatTTL)
	if err != nil {
		if !s.down {
			s.log.Warn("fleet heartbeat failed; keeping this API's share of the global limit", "error", err, "share_rps", s.bucket.Limit())
		}
		s.down = true
		return
	}
	s.down = false
	s.metrics.FleetSize.Set(float64(n))
	s.set(n)
}

// set makes the bucket this process's share of the budget among n live
// processes, rounded up (the fleet may pass a few more than the budget,
// never starve a process at a budget smaller than the fleet).
func (s *Share) set(n int) {
	share := (s.budget + max(n, 1) - 1) / max(n, 1)
	if rate.Limit(share) != s.bucket.Limit() {
		s.bucket.SetLimit(rate.Limit(share))
		s.bucket.SetBurst(share)
		s.log.Info("global rate limit share", "fleet_size", n, "share_rps", share, "fleet_rps", s.budget)
	}
	s.metrics.GlobalShare.Set(float64(share))
}

// Leave takes this process out of the fleet on shutdown, for good: a
// heartbeat after it would count this process alive again.
func (s *Share) Leave(ctx context.Context) {
	if s.members == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left = true
	if err := s.members.Leave(ctx, s.member); err != nil {
		s.log.Warn("could not leave the fleet; the others take this API's share when its heartbeat lapses", "error", err)
	}
}
