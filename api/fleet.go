package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"golang.org/x/time/rate"
)

// Fleet is the set of live API processes of one deployment. With it, the
// global rate limit is the fleet's budget, split evenly among the processes
// that are up: adding an API behind the balancer does not raise what the
// fleet lets through to Redis, and the survivors of a crash take the dead
// one's share once its heartbeat lapses. The split is even because the
// balancer spreads requests evenly (round robin); a process that got more
// than its share refuses the excess with 429, as one process would.
type Fleet interface {
	// Beat says member is alive for ttl more and returns how many members
	// are alive, itself included.
	Beat(ctx context.Context, member string, ttl time.Duration) (int, error)
	// Leave takes member out at once.
	Leave(ctx context.Context, member string) error
}

const (
	// fleetBeat is how often a process renews its heartbeat and re-reads
	// the fleet's size; fleetTTL how long a heartbeat lasts: three missed
	// beats before the others count a process gone.
	fleetBeat = time.Second
	fleetTTL  = 3 * time.Second
)

// fleetMember names this process in the fleet: host and pid for the
// operator, random bytes so that two processes never share a name.
func fleetMember() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// beat renews this process's heartbeat and sets its share of the global
// limit. When Redis does not answer, the last share stays: the limit still
// holds without Redis, at the size the fleet last had.
func (s *Server) beat(ctx context.Context) {
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	if s.left {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, fleetBeat)
	defer cancel()
	n, err := s.cfg.Fleet.Beat(ctx, s.member, fleetTTL)
	if err != nil {
		if !s.fleetDown {
			s.log.Warn("fleet heartbeat failed; keeping this API's share of the global limit", "error", err, "share_rps", s.global.Limit())
		}
		s.fleetDown = true
		return
	}
	s.fleetDown = false
	s.cfg.Metrics.FleetSize.Set(float64(n))
	s.setGlobalShare(n)
}

// setGlobalShare sets this process's token bucket to its share of the
// fleet's budget among n live processes, rounded up (the fleet may pass a
// few more than the budget, never starve a process at a budget smaller than
// the fleet).
func (s *Server) setGlobalShare(n int) {
	if s.global == nil {
		return
	}
	share := (s.cfg.Limits.Global + max(n, 1) - 1) / max(n, 1)
	if rate.Limit(share) != s.global.Limit() {
		s.global.SetLimit(rate.Limit(share))
		s.global.SetBurst(share)
		s.log.Info("global rate limit share", "fleet_size", n, "share_rps", share, "fleet_rps", s.cfg.Limits.Global)
	}
	s.cfg.Metrics.GlobalShare.Set(float64(share))
}

// leaveFleet takes this process out of the fleet on shutdown, for good: a
// heartbeat after it would count this process alive again.
func (s *Server) leaveFleet(ctx context.Context) {
	if s.cfg.Fleet == nil {
		return
	}
	s.fleetMu.Lock()
	defer s.fleetMu.Unlock()
	s.left = true
	if err := s.cfg.Fleet.Leave(ctx, s.member); err != nil {
		s.log.Warn("could not leave the fleet; the others take this API's share when its heartbeat lapses", "error", err)
	}
}
