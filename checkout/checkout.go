// Package checkout is admission: the rules of a purchase attempt once the
// front door (auth, the blocklist, rate limits, the risk check, the
// ticket) has let it through, between the HTTP handler and the Redis gate.
// An attempt is refused outside the sale window, except that a key
// answered before a pause or the end hears that answer again; it is
// admitted or refused by the gate's one atomic script; and a winner's
// workflow start is handed to the process's starter after the answer,
// never waited for. Losers touch neither MySQL nor Temporal.
package checkout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
)

// Gate is the Redis side of admission (redis.Gate).
type Gate interface {
	// AdmitAttempt runs the admission script: the per-user limit, the
	// stock, the deduction and the reservation in one step.
	AdmitAttempt(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
	// Pinned is the answer pinned to the attempt's key (nil, nil: none).
	Pinned(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
	// PinnedOrRefused is Pinned in a sold-out session: a key without a pin
	// gets the refusal the script would give it.
	PinnedOrRefused(ctx context.Context, a *seckill.Attempt) (*seckill.Admission, error)
}

// Starts takes a winner's workflow start without waiting (the process's
// starter); false when its queue is full.
type Starts interface {
	Offer(req *seckill.OrderRequest) bool
}

// AdmitWait bounds how long an attempt waits for its admission, queue and
// retries included; past it the answer is UNAVAILABLE, the outcome unknown
// until the retry with the same key.
const AdmitWait = 3 * time.Second

// Checkout admits purchase attempts.
type Checkout struct {
	Gate   Gate
	Starts Starts
	// PayTimeout is each order's (its workflow's input).
	PayTimeout time.Duration
	Log        *slog.Logger
}

// Answer is what an attempt is told: its admission (202, the order number
// holding its units) or its refusal.
type Answer struct {
	Admission *seckill.Admission
	Err       error
}

// Window refuses an attempt outside its session's sale window (not
// started, ended, paused) and a quantity the session does not allow. A
// keyed attempt refused ENDED or PAUSED whose key was answered before
// gets that answer again instead (pinned is true): 202 with the order its
// reservation holds, so the shopper does not believe they lost while
// their order waits for payment, or its pinned refusal.
func (c *Checkout) Window(ctx context.Context, a *seckill.Attempt) (ans Answer, pinned bool) {
	s := a.Session
	err := Open(s, a.Now)
	if code := seckill.ErrorCode(err); code == seckill.EENDED || code == seckill.EPAUSED {
		if adm, perr := c.Gate.Pinned(ctx, a); adm != nil || perr != nil {
			return c.answer(a, adm, perr), true
		}
	}
	if err != nil {
		return Answer{Err: err}, false
	}
	if a.Quantity < 1 || a.Quantity > s.PerUserLimit {
		return Answer{Err: seckill.Errorf(seckill.EINVALID, "quantity must be between 1 and %d", s.PerUserLimit)}, false
	}
	return Answer{}, false
}

// Open refuses what is done in a session outside its sale window, and
// while an operator paused it: NOT_STARTED, ENDED, PAUSED.
func Open(s *seckill.Session, now time.Time) error {
	switch s.StateAt(now, 1) {
	case seckill.SessionUpcoming:
		return seckill.Errorf(seckill.ENOTSTARTED, "session %d starts at %s", s.ID, s.StartAt.Format(time.RFC3339))
	case seckill.SessionEnded:
		return seckill.Errorf(seckill.EENDED, "session %d ended at %s", s.ID, s.EndAt.Format(time.RFC3339))
	case seckill.SessionPaused:
		return seckill.Errorf(seckill.EPAUSED, "session %d is paused; try again later", s.ID)
	}
	return nil
}

// SoldOut answers a keyed attempt in a session known to be sold out from
// its pin (one read, nothing decided): the reservation it holds, or the
// refusal the script would give it.
func (c *Checkout) SoldOut(ctx context.Context, a *seckill.Attempt) Answer {
	adm, err := c.Gate.PinnedOrRefused(ctx, a)
	return c.answer(a, adm, err)
}

// Admit gives the attempt an order number and runs the admission script,
// waiting at most AdmitWait. A winner's order is handed to the starter
// before Admit returns (accept), as is a replayed one's in Window and
// SoldOut.
func (c *Checkout) Admit(ctx context.Context, a *seckill.Attempt) Answer {
	a.OrderNo = seckill.NewOrderNo(a.Session.ID)
	ctx, cancel := context.WithTimeout(ctx, AdmitWait)
	defer cancel()
	adm, err := c.Gate.AdmitAttempt(ctx, a)
	return c.answer(a, adm, err)
}

// answer is the gate's answer to a, its order handed on when admitted.
func (c *Checkout) answer(a *seckill.Attempt, adm *seckill.Admission, err error) Answer {
	switch {
	case err == nil && adm == nil:
		// A pin lookup without a key answers nothing; never an answer.
		err = fmt.Errorf("checkout: the gate gave attempt %s no answer", a.TraceID)
	case err == nil:
		c.accept(a, adm)
	}
	return Answer{adm, err}
}

// accept hands an admitted attempt's order to the starter as its answer
// leaves: on a replay, the pinned order, whose workflow is
// started again if its reservation still waits (the start is idempotent).
// The answer never waits for Temporal: the reservation and its
// pending-start entry, written by the script, are the durable intent; a
// full queue leaves the order to the pending-start outbox, which the API's
// outbox relay drains a few seconds later (and the worker's relay behind
// it). The workflow ID is the order number, so a start is never doubled.
func (c *Checkout) accept(a *seckill.Attempt, adm *seckill.Admission) {
	if adm.Replayed {
		c.Log.Info("order replayed for its idempotency key", "trace_id", a.TraceID, "order_no", adm.OrderNo,
			"session_id", a.Session.ID, "user_id", a.UserID)
	} else {
		// One line per winner (bounded by the stock, unlike the losers):
		// where following a purchase by its trace id starts.
		c.Log.Info("order accepted", "trace_id", a.TraceID, "order_no", adm.OrderNo, "session_id", a.Session.ID,
			"user_id", a.UserID, "quantity", a.Quantity)
	}
	if adm.Reservation == nil {
		return
	}
	req := seckill.NewOrderRequest(*adm.Reservation, a.Session, c.PayTimeout)
	if !c.Starts.Offer(req) {
		c.Log.Warn("starter queue full; the order's start is left to the outbox", "order_no", req.OrderNo, "trace_id", req.TraceID)
	}
}
