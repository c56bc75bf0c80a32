package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
)

const (
	// SessionWorkflowName is the registered name of a session's life.
	SessionWorkflowName = "SessionWorkflow"
	// SessionChangedSignal tells a session's workflow that an operator
	// changed its window (PATCH before the start, end): it reads the
	// session again and moves its timers.
	SessionChangedSignal = "session-changed"
)

// SessionLife is the input of SessionWorkflow.
type SessionLife struct {
	SessionID int64 `json:"session_id"`
	// PreheatLead: the session is preheated this long before its start
	// (at once when it starts sooner). RetainAfter: once it has ended and
	// nothing of it is live, its Redis keys expire after this.
	PreheatLead time.Duration `json:"preheat_lead"`
	RetainAfter time.Duration `json:"retain_after"`
}

// quietEvery is how often an ended session is asked again whether anything
// of it is still live (orders waiting for payment close within the pay
// timeout).
const quietEvery = time.Minute

// sessionSteps names the session activities by method value (see steps).
var sessionSteps *activities.Sessions

// SessionWorkflow is a session's life, one per session (ID
// session:<task queue>:<id>,
// visible in the Web UI with its SessionID): it preheats the session
// PreheatLead before its start, waits for its end, then, once no order of
// it is live, lets its Redis keys expire after RetainAfter and takes it out
// of the relays' and the scheduled reconcile's working set. An operator's
// change of the window (SessionChangedSignal) moves the timers. Manual
// preheat stays possible at any time: the workflow's preheat then finds the
// stock loaded and changes nothing.
func SessionWorkflow(ctx workflow.Context, in SessionLife) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 30 * time.Second},
	})
	log := workflow.GetLogger(ctx)
	changed := workflow.GetSignalChannel(ctx, SessionChangedSignal)
	sealed := workflow.GetVersion(ctx, drawSealChange, workflow.DefaultVersion, 1) == 1
	var sess seckill.Session
	load := func() error {
		if err := workflow.ExecuteActivity(ctx, sessionSteps.LoadSession, in.SessionID).Get(ctx, &sess); err != nil {
			return err
		}
		if sealed && sess.Mode == seckill.ModeDraw && sess.DrawCommitment == "" && !sess.Drawn() {
			// Registration opens with the commitment. Not committed (no
			// worker with the key within a minute): registration stays
			// closed; the next load, or the draw, commits.
			if err := workflow.ExecuteActivity(keyed(ctx, time.Minute), sessionSteps.CommitDraw, in.SessionID).Get(ctx, &sess.DrawCommitment); err != nil {
				log.Error("draw not committed", "session_id", in.SessionID, "error", err)
			}
		}
		return nil
	}
	// sleepUntil waits for the instant at(), re-reading the session on each
	// change signal; it returns when the instant has come.
	sleepUntil := func(at func() time.Time) error {
		for {
			d := at().Sub(workflow.Now(ctx))
			if d <= 0 {
				return nil
			}
			tctx, cancel := workflow.WithCancel(ctx)
			fired := false
			sel := workflow.NewSelector(ctx)
			sel.AddFuture(workflow.NewTimer(tctx, d), func(workflow.Future) { fired = true })
			sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
			sel.Select(ctx)
			cancel()
			if fired {
				return nil
			}
			if err := load(); err != nil {
				return err
			}
			log.Info("session changed", "session_id", in.SessionID, "start_at", sess.StartAt, "end_at", sess.EndAt)
		}
	}

	if err := load(); err != nil {
		return err
	}
	preheatAt := func() time.Time { return sess.StartAt.Add(-in.PreheatLead) }
	if sealed {
		if err := publishRegistrants(ctx, in, &sess, preheatAt, sleepUntil); err != nil {
			return err
		}
	}
	if err := sleepUntil(preheatAt); err != nil {
		return err
	}
	if !workflow.Now(ctx).Before(sess.EndAt) {
		log.Info("session ended before its preheat", "session_id", in.SessionID)
	} else if err := workflow.ExecuteActivity(ctx, sessionSteps.PreheatSession, in.SessionID).Get(ctx, nil); err != nil {
		// Redis lost the state of a session with orders: an operator's
		// forced preheat (reconcile and the alerts report it). The session
		// still ends and retires on time.
		log.Error("session not preheated", "session_id", in.SessionID, "error", err)
	}
	if workflow.GetVersion(ctx, modeAtStartChange, workflow.DefaultVersion, 1) == 1 {
		// The session as it is now: its mode no longer changes once
		// preheated, and a change whose signal was lost is seen here.
		if err := load(); err != nil {
			return err
		}
	}
	if sess.Mode == seckill.ModeDraw && workflow.GetVersion(ctx, drawChange, workflow.DefaultVersion, 1) == 1 {
		if err := drawAndPass(ctx, in, &sess, sealed, sleepUntil); err != nil {
			return err
		}
	}
	if err := sleepUntil(func() time.Time { return sess.EndAt }); err != nil {
		return err
	}
	if sess.Mode == seckill.ModeDraw && workflow.GetVersion(ctx, lostChange, workflow.DefaultVersion, 1) == 1 {
		recordLost(ctx, in)
	}
	for {
		var retired bool
		if err := workflow.ExecuteActivity(ctx, sessionSteps.RetireSession, in.SessionID, in.RetainAfter).Get(ctx, &retired); err != nil {
			return err
		}
		if retired {
			return nil
		}
		if err := workflow.Sleep(ctx, quietEvery); err != nil {
			return err
		}
	}
}

// drawChange is the GetVersion id of the draw step: the histories
// recorded before it never reach it (no sale was a draw), and the version
// marker keeps a later change of the step replayable.
const drawChange = "draw"

// modeAtStartChange is the GetVersion id of reading the session again
// after the preheat, so that the sale's mode decides the draw as it is at
// the start rather than as the workflow first read it.
const modeAtStartChange = "mode-at-start"

// lostChange is the GetVersion id of the registration.lost events at a
// draw's end.
const lostChange = "lost-events"

// drawRetryChange is the GetVersion id of trying a failed draw again.
const drawRetryChange = "draw-retry"

// drawSealChange is the GetVersion id of the sealed seed: the commitment
// asked of a worker holding the key when a draw is loaded without one,
// the registrant list published at register_until, and the draw run on
// the draw's task queue (DrawQueue) from DrawAt.
const drawSealChange = "draw-sealed"

// DrawQueue is the task queue of the steps that need the draw key: only
// `seckill worker` polls it, never the worker an API embeds for eager
// starts, which holds no key.
func DrawQueue(taskQueue string) string { return taskQueue + "-draw" }

// keyed is ctx for a step on the draw's task queue; timeout bounds its
// wait for a worker holding the key (zero: none, as long as it takes).
func keyed(ctx workflow.Context, timeout time.Duration) workflow.Context {
	ctx = workflow.WithTaskQueue(ctx, DrawQueue(workflow.GetInfo(ctx).TaskQueueName))
	if timeout > 0 {
		ctx = workflow.WithScheduleToCloseTimeout(ctx, timeout)
	}
	return ctx
}

// publishRegistrants publishes a draw's registrant list (its count and
// digest) DrawMargin after register_until, when that comes before the
// preheat; otherwise the draw, later, publishes it first. A sale changed
// to a draw meanwhile is seen: sleepUntil reads the session again.
func publishRegistrants(ctx workflow.Context, in SessionLife, sess *seckill.Session, preheatAt func() time.Time, sleepUntil func(func() time.Time) error) error {
	closeAt := func() time.Time { return sess.RegisterUntil.Add(seckill.DrawMargin) }
	err := sleepUntil(func() time.Time {
		if sess.Mode == seckill.ModeDraw && closeAt().Before(preheatAt()) {
			return closeAt()
		}
		return preheatAt()
	})
	if err != nil || sess.Mode != seckill.ModeDraw || sess.RegistrantsDigest != "" || workflow.Now(ctx).Before(closeAt()) {
		return err
	}
	if err := workflow.ExecuteActivity(ctx, sessionSteps.PublishRegistrants, in.SessionID).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("registrants not published", "session_id", in.SessionID, "error", err)
	}
	return nil
}

// drawRetryEvery is how long a draw that failed for good waits before it
// is tried again.
const drawRetryEvery = time.Minute

// passesPerRun bounds one run's history: after this many passes of rights
// the workflow continues as new, and the new run finds the preheat and
// the draw done (both are no-ops then) and goes on passing.
const passesPerRun = 500

// passEvery is how often a draw's rights are passed on: often enough that
// a lapsed right's unit waits a fraction of a right's life.
func passEvery(s *seckill.Session) time.Duration {
	return max(time.Second, min(s.RightTTL()/4, 5*time.Second))
}

// drawAndPass is a draw sale's start: the draw (DrawSession, once), then
// passes of lapsed rights (PassRights) every passEvery until the end.
func drawAndPass(ctx workflow.Context, in SessionLife, sess *seckill.Session, sealed bool, sleepUntil func(func() time.Time) error) error {
	log := workflow.GetLogger(ctx)
	drawAt := func() time.Time { return sess.StartAt }
	if sealed {
		drawAt = sess.DrawAt
	}
	if err := sleepUntil(drawAt); err != nil {
		return err
	}
	if !workflow.Now(ctx).Before(sess.EndAt) {
		return nil
	}
	// A draw among many registrants reads them all: a longer timeout,
	// with heartbeats (one per batch of entries) to notice a dead worker.
	dctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 30 * time.Second},
	})
	if sealed {
		dctx = keyed(dctx, 0)
	}
	for tries := 1; ; tries++ {
		err := workflow.ExecuteActivity(dctx, sessionSteps.DrawSession, in.SessionID).Get(ctx, nil)
		if err == nil {
			break
		}
		// Not drawn (an error no retry of the activity cures): nobody may
		// buy; reconcile reports the draw late and the alerts page. The
		// draw is tried again every minute, so once an operator fixes the
		// cause the sale opens without a hand on the workflow. Histories
		// recorded before the retry gave up here.
		log.Error("session not drawn", "session_id", in.SessionID, "error", err)
		next := workflow.Now(ctx).Add(drawRetryEvery)
		if workflow.GetVersion(ctx, drawRetryChange, workflow.DefaultVersion, 1) == workflow.DefaultVersion || !next.Before(sess.EndAt) {
			return nil
		}
		if tries == passesPerRun { // a history bounded as the passes' is
			return workflow.NewContinueAsNewError(ctx, SessionWorkflow, in)
		}
		if err := sleepUntil(func() time.Time { return next }); err != nil {
			return err
		}
		if !workflow.Now(ctx).Before(sess.EndAt) {
			return nil
		}
	}
	for passes := 0; workflow.Now(ctx).Before(sess.EndAt); passes++ {
		if passes == passesPerRun {
			return workflow.NewContinueAsNewError(ctx, SessionWorkflow, in)
		}
		next := workflow.Now(ctx).Add(passEvery(sess))
		if err := sleepUntil(func() time.Time { return next }); err != nil {
			return err
		}
		if err := workflow.ExecuteActivity(ctx, sessionSteps.PassRights, in.SessionID).Get(ctx, nil); err != nil {
			log.Error("rights not passed", "session_id", in.SessionID, "error", err)
		}
	}
	return nil
}

// recordLost records a drawn sale's registration.lost events at its end
// (RecordLost: nothing unless the worker is told to). A million
// registrants take minutes, with heartbeats; a failure (reservations that
// never became orders within the retries) is logged, and the sale retires
// as ever.
func recordLost(ctx workflow.Context, in SessionLife) {
	lctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumInterval: 30 * time.Second, MaximumAttempts: 30},
	})
	if err := workflow.ExecuteActivity(lctx, sessionSteps.RecordLost, in.SessionID).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("registration.lost events not recorded", "session_id", in.SessionID, "error", err)
	}
}
