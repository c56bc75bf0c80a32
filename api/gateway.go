package api

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/seckill/seckill/admission"
	"github.com/seckill/seckill/ratelimit"
)

// Blocklist is the admin's blocklist, in MySQL; every API keeps a copy
// in memory (admission's), refreshed every second.
type Blocklist interface {
	Block(ctx context.Context, userID int64, reason string) error
	Unblock(ctx context.Context, userID int64) error
}

// Limits are the HTTP server's rate limits, in each process's memory
// (the fleet-wide ones, per user, IP and device, are admission's);
// requests per second, 0 turns a limit off.
type Limits struct {
	// Global is the token bucket in front of everything, in each
	// process's memory (fleet.Share): the fleet's budget split among the
	// live APIs when Config.Fleet is set, this process's alone otherwise.
	Global int
	// Read is per client IP on the public reads (the session list, one
	// session, order polling), in each process's memory.
	Read int
	// AdminFails is how many failed admin credentials a client IP may
	// send a minute, in each process's memory; past it the admin API
	// answers it 429 before looking at its credential (ratelimit.PerMinute).
	AdminFails int
}

// globalLimit is the global token bucket (this process's share of it), the
// first thing an admission meets.
func (s *Server) globalLimit(c *fiber.Ctx) error {
	if s.global != nil && !s.global.Allow() {
		c.Set(HeaderLayer, LayerGlobalLimit)
		return rateLimited(c, time.Second)
	}
	return c.Next()
}

func rateLimited(c *fiber.Ctx, retryAfter time.Duration) error {
	setRetryAfter(c, retryAfter)
	return admission.ErrRateLimited
}

// setRetryAfter says, in whole seconds (at least one), when to retry.
func setRetryAfter(c *fiber.Ctx, d time.Duration) {
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(math.Max(1, math.Ceil(d.Seconds())))))
}

// distributedLimits applies the per-user and per-IP limits (admission's).
// If Redis cannot answer, the request is refused with UNAVAILABLE: a
// limit is never skipped.
func (s *Server) distributedLimits(c *fiber.Ctx, user int64) error {
	return s.refused(c, s.svc.Admission.Limits.Allow(c.UserContext(), user, ratelimit.Key(s.clientIP(c))))
}

// countDoor is the order route's first handler: it counts the request in
// and out of the front door, whatever answers it (the memory, a limit, the
// script).
func (s *Server) countDoor(c *fiber.Ctx) error {
	s.door.Enter()
	defer s.door.Leave()
	return c.Next()
}

// soldOutFast answers SOLD_OUT from memory for a session this process saw
// sell out, before any other work (admission.SoldOut.Fast).
func (s *Server) soldOutFast(c *fiber.Ctx) error {
	if s.svc.Admission.SoldOut.Any() && s.svc.Admission.SoldOut.Fast(c.Params("id"), utils.UnsafeString(c.Request().Header.Peek(HeaderIdempotencyKey))) {
		c.Set(HeaderLayer, LayerSoldOutMemory)
		return errSoldOut
	}
	return c.Next()
}

// Start runs the HTTP server's background loops until ctx ends: the
// fleet's heartbeat, the dependency pings and the front door's samples
// (admission's loops are internal/app's, which built it).
func (s *Server) Start(ctx context.Context) {
	if s.global != nil {
		s.global.Start(ctx)
	}
	if s.cfg.DependencyPing >= 0 {
		go s.cfg.Metrics.WatchDependencies(ctx, s.cfg.DependencyPing, s.svc.Dependencies)
	}
	s.door.Start(ctx)
}

// block: PUT /admin/v1/blocklist/{user_id}.
func (s *Server) block(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	name, role := actor(c)
	if err := s.svc.Blocklist.Block(c.UserContext(), id, fmt.Sprintf("by %s (%s)", name, role)); err != nil {
		return err
	}
	s.log.Info("user blocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, true)
}

// unblock: DELETE /admin/v1/blocklist/{user_id}.
func (s *Server) unblock(c *fiber.Ctx) error {
	id, err := pathID(c, "user_id")
	if err != nil {
		return err
	}
	if err := s.svc.Blocklist.Unblock(c.UserContext(), id); err != nil {
		return err
	}
	name, role := actor(c)
	s.log.Info("user unblocked", "trace_id", traceID(c), "user_id", id, "actor", name, "role", role)
	return s.blocklistChanged(c, id, false)
}

func (s *Server) blocklistChanged(c *fiber.Ctx, id int64, blocked bool) error {
	if err := s.svc.Admission.RefreshBlocklist(c.UserContext()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"user_id": id, "blocked": blocked})
}
