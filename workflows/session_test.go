package workflows_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/workflows"
)

// lifeHarness runs SessionWorkflow on the test suite's skipped clock with
// its three activities replaced by recorders: the session they load can be
// changed mid-run, and RetireSession answers "something is live" a given
// number of times first.
type lifeHarness struct {
	env *testsuite.TestWorkflowEnvironment

	mu        sync.Mutex
	session   seckill.Session
	busy      int         // RetireSession calls to answer false
	preheats  []time.Time // workflow clock at each call
	retires   []time.Time
	commits   []time.Time // a draw's CommitDraw and PublishRegistrants
	publishes []time.Time
	retainArg time.Duration
}

func newLifeHarness(t *testing.T, start, end time.Time, busy int) *lifeHarness {
	var suite testsuite.WorkflowTestSuite
	h := &lifeHarness{env: suite.NewTestWorkflowEnvironment(), busy: busy,
		session: seckill.Session{ID: testSession, StartAt: start, EndAt: end}}
	h.env.SetStartTime(startTime)
	h.env.RegisterWorkflowWithOptions(workflows.SessionWorkflow, workflow.RegisterOptions{Name: workflows.SessionWorkflowName})
	h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (*seckill.Session, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		s := h.session
		return &s, nil
	}, activity.RegisterOptions{Name: activities.LoadSessionName})
	h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (int, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.preheats = append(h.preheats, h.env.Now().UTC())
		return 10, nil
	}, activity.RegisterOptions{Name: activities.PreheatSessionName})
	h.env.RegisterActivityWithOptions(func(_ context.Context, id int64, retain time.Duration) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.retires = append(h.retires, h.env.Now().UTC())
		h.retainArg = retain
		if h.busy > 0 {
			h.busy--
			return false, nil
		}
		return true, nil
	}, activity.RegisterOptions{Name: activities.RetireSessionName})
	h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (string, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.commits = append(h.commits, h.env.Now().UTC())
		h.session.DrawCommitment = "c0ffee"
		return h.session.DrawCommitment, nil
	}, activity.RegisterOptions{Name: activities.CommitDrawName})
	h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.publishes = append(h.publishes, h.env.Now().UTC())
		return nil
	}, activity.RegisterOptions{Name: activities.PublishRegistrantsName})
	t.Cleanup(func() { h.env.AssertExpectations(t) })
	return h
}

func (h *lifeHarness) run(t *testing.T) {
	h.env.ExecuteWorkflow(workflows.SessionWorkflowName, workflows.SessionLife{
		SessionID: testSession, PreheatLead: 5 * time.Minute, RetainAfter: 24 * time.Hour})
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
}

// The life of a session created two hours ahead: preheated exactly five
// minutes before its start, retired at its end once nothing is live (asked
// again every minute meanwhile), with the configured retention.
func TestSessionLifePreheatsThenRetires(t *testing.T) {
	start := startTime.Add(2 * time.Hour)
	h := newLifeHarness(t, start, start.Add(time.Hour), 2)
	h.run(t)
	require.Equal(t, []time.Time{start.Add(-5 * time.Minute)}, h.preheats)
	end := start.Add(time.Hour)
	require.Equal(t, []time.Time{end, end.Add(time.Minute), end.Add(2 * time.Minute)}, h.retires)
	require.Equal(t, 24*time.Hour, h.retainArg)
}

// A session created less than the lead before its start is preheated at
// once.
func TestSessionLifePreheatsAtOnceWhenLate(t *testing.T) {
	start := startTime.Add(time.Minute)
	h := newLifeHarness(t, start, start.Add(time.Hour), 0)
	h.run(t)
	require.Equal(t, []time.Time{startTime}, h.preheats)
}

// An operator moves the window (PATCH, then the signal): the life preheats
// and retires by the new one. Ended before its preheat: never preheated.
func TestSessionLifeFollowsChanges(t *testing.T) {
	start := startTime.Add(3 * time.Hour)
	h := newLifeHarness(t, start, start.Add(time.Hour), 0)
	newStart := startTime.Add(30 * time.Minute)
	h.env.RegisterDelayedCallback(func() {
		h.mu.Lock()
		h.session.StartAt, h.session.EndAt = newStart, newStart.Add(10*time.Minute)
		h.mu.Unlock()
		h.env.SignalWorkflow(workflows.SessionChangedSignal, nil)
	}, 10*time.Minute)
	h.run(t)
	require.Equal(t, []time.Time{newStart.Add(-5 * time.Minute)}, h.preheats)
	require.Equal(t, []time.Time{newStart.Add(10 * time.Minute)}, h.retires)

	ended := newLifeHarness(t, start, start.Add(time.Hour), 0)
	ended.env.RegisterDelayedCallback(func() {
		ended.mu.Lock()
		ended.session.EndAt = startTime.Add(time.Minute) // POST /end
		ended.session.StartAt = ended.session.EndAt.Add(-time.Millisecond)
		ended.mu.Unlock()
		ended.env.SignalWorkflow(workflows.SessionChangedSignal, nil)
	}, time.Minute)
	ended.run(t)
	require.Empty(t, ended.preheats, "ended before its preheat")
	require.Equal(t, []time.Time{startTime.Add(time.Minute)}, ended.retires)
}

// A draw sale's life: preheated, drawn exactly at the start (once), its
// rights passed on every min(ttl/4, 5 s) until the end, then retired; a
// sale long enough for passesPerRun passes continues as new instead of
// growing its history.
func TestSessionLifeDrawsAtTheStartThenPassesRights(t *testing.T) {
	for _, c := range []struct {
		length time.Duration
		asNew  bool
	}{{30 * time.Minute, false}, {time.Hour, true}} {
		start := startTime.Add(10 * time.Minute)
		h := newLifeHarness(t, start, start.Add(c.length), 0)
		h.session.Mode, h.session.RightTTLSeconds = seckill.ModeDraw, 60
		var draws, passes []time.Time
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			draws = append(draws, h.env.Now().UTC())
			return nil
		}, activity.RegisterOptions{Name: activities.DrawSessionName})
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (int, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			passes = append(passes, h.env.Now().UTC())
			return 0, nil
		}, activity.RegisterOptions{Name: activities.PassRightsName})
		h.env.ExecuteWorkflow(workflows.SessionWorkflowName, workflows.SessionLife{
			SessionID: testSession, PreheatLead: 5 * time.Minute, RetainAfter: time.Hour})
		require.True(t, h.env.IsWorkflowCompleted())
		require.Equal(t, []time.Time{start}, draws)
		require.Equal(t, start.Add(5*time.Second), passes[0])
		require.Equal(t, 5*time.Second, passes[1].Sub(passes[0]))
		if !c.asNew {
			require.NoError(t, h.env.GetWorkflowError())
			require.Len(t, passes, int(c.length/(5*time.Second)))
			require.Len(t, h.retires, 1)
			continue
		}
		var asNew *workflow.ContinueAsNewError
		require.ErrorAs(t, h.env.GetWorkflowError(), &asNew)
		require.Len(t, passes, 500)
		require.Empty(t, h.retires)
	}
}

// A draw sale's seed is committed (by a worker holding the key) as soon as
// its life loads it, once; its registrant list is published DrawMargin
// after register_until (the database's clock decides; the margin covers
// the two clocks' difference); and the draw runs at the start, never
// before that margin: a window closing at the start moves the draw.
func TestSessionLifeCommitsPublishesThenDraws(t *testing.T) {
	start := startTime.Add(2 * time.Hour)
	for _, c := range []struct {
		until            time.Time
		publish, drawsAt []time.Time
	}{
		{start.Add(-time.Hour), []time.Time{start.Add(-time.Hour + seckill.DrawMargin)}, []time.Time{start}},
		// Closing after the preheat: the draw publishes the list first.
		{start, nil, []time.Time{start.Add(seckill.DrawMargin)}},
	} {
		h := newLifeHarness(t, start, start.Add(time.Minute), 0)
		h.session.Mode, h.session.RightTTLSeconds = seckill.ModeDraw, 60
		h.session.RegisterFrom, h.session.RegisterUntil = startTime, c.until
		var draws []time.Time
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) error {
			draws = append(draws, h.env.Now().UTC())
			return nil
		}, activity.RegisterOptions{Name: activities.DrawSessionName})
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (int, error) { return 0, nil },
			activity.RegisterOptions{Name: activities.PassRightsName})
		h.run(t)
		require.Equal(t, []time.Time{startTime}, h.commits, "committed at once, once")
		require.Equal(t, c.publish, h.publishes)
		require.Equal(t, c.drawsAt, draws)
	}
}

// A draw that fails for good (an error no retry of the activity cures) is
// tried again every minute, not given up: nobody may buy meanwhile, and
// once the cause is fixed the sale is drawn and its rights pass on. A
// draw failing to the end tries no more once the sale has ended, and a
// long sale's run continues as new after passesPerRun tries.
func TestSessionLifeTriesAFailedDrawAgain(t *testing.T) {
	for _, c := range []struct {
		failures int
		draws    int
		length   time.Duration
	}{{2, 3, 10 * time.Minute}, {1000, 10, 10 * time.Minute}, {1000, 500, 24 * time.Hour}} {
		start := startTime.Add(10 * time.Minute)
		h := newLifeHarness(t, start, start.Add(c.length), 0)
		h.session.Mode, h.session.RightTTLSeconds = seckill.ModeDraw, 60
		var draws []time.Time
		passes := 0
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			draws = append(draws, h.env.Now().UTC())
			if len(draws) <= c.failures {
				return temporal.NewNonRetryableApplicationError("injected: the draw cannot run", seckill.ENOTFOUND, nil)
			}
			return nil
		}, activity.RegisterOptions{Name: activities.DrawSessionName})
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (int, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			passes++
			return 0, nil
		}, activity.RegisterOptions{Name: activities.PassRightsName})
		h.env.ExecuteWorkflow(workflows.SessionWorkflowName, workflows.SessionLife{
			SessionID: testSession, PreheatLead: 5 * time.Minute, RetainAfter: 24 * time.Hour})
		require.True(t, h.env.IsWorkflowCompleted())
		require.Len(t, draws, c.draws)
		if c.length > time.Hour {
			var asNew *workflow.ContinueAsNewError
			require.ErrorAs(t, h.env.GetWorkflowError(), &asNew)
			require.Empty(t, h.retires)
			continue
		}
		require.NoError(t, h.env.GetWorkflowError())
		for i, at := range draws {
			require.Equal(t, start.Add(time.Duration(i)*time.Minute), at, "try %d", i+1)
		}
		if c.failures < c.draws {
			require.Equal(t, (10*time.Minute-2*time.Minute)/(5*time.Second), time.Duration(passes), "passes from the draw to the end")
		} else {
			require.Zero(t, passes, "never drawn: nothing to pass on")
		}
		require.Len(t, h.retires, 1)
	}
}

// The workflow decides "draw or not" from the session as it is at the
// start, not as it first read it: a sale changed to a draw before its
// preheat, whose change signal was lost, is drawn at its start; one
// changed away from a draw is not.
func TestSessionLifeDrawsByTheModeAtTheStart(t *testing.T) {
	for _, c := range []struct {
		from, to seckill.SessionMode
		draws    int
	}{{seckill.ModeFirstCome, seckill.ModeDraw, 1}, {seckill.ModeDraw, seckill.ModeFirstCome, 0}} {
		start := startTime.Add(time.Hour)
		h := newLifeHarness(t, start, start.Add(time.Minute), 0)
		h.session.Mode, h.session.RightTTLSeconds = c.from, 60
		draws := 0
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			draws++
			return nil
		}, activity.RegisterOptions{Name: activities.DrawSessionName})
		h.env.RegisterActivityWithOptions(func(_ context.Context, id int64) (int, error) {
			return 0, nil
		}, activity.RegisterOptions{Name: activities.PassRightsName})
		h.env.RegisterDelayedCallback(func() {
			h.mu.Lock()
			h.session.Mode = c.to // PATCH, no signal
			h.mu.Unlock()
		}, 10*time.Minute)
		h.run(t)
		require.Equal(t, c.draws, draws, "%s → %s", c.from, c.to)
	}
}
