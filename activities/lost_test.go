package activities_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/activities"
	"github.com/seckill/seckill/internal/testenv"
)

// A drawn sale's end records registration.lost only when the worker is
// told to (SECKILL_EVENTS_LOST=1): without it none, however many lost;
// with it one per registrant who bought nothing, and a second run none.
func TestLostEventsOnlyWithTheFlag(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	users := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	sess := drawSale(t, e, 2, users)
	e.CommitDraw(sess.ID)
	require.NoError(t, drawer(t, e, sess.ID, 0)(e.DB))

	var ts testsuite.WorkflowTestSuite
	recordLost := func(flag bool) {
		env := ts.NewTestActivityEnvironment()
		acts := &activities.Sessions{Store: e.DB, Gate: e.Gate, LostEvents: flag}
		env.RegisterActivity(acts)
		_, err := env.ExecuteActivity(acts.RecordLost, sess.ID)
		require.NoError(t, err)
	}
	count := func() map[seckill.EventType]int {
		for {
			n, err := e.DB.SequenceEvents(ctx, 100)
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		events, _, err := e.DB.Events(ctx, 0, 1000)
		require.NoError(t, err)
		out := map[seckill.EventType]int{}
		for _, ev := range events {
			out[ev.Type]++
		}
		return out
	}
	recordLost(false)
	require.Equal(t, map[seckill.EventType]int{seckill.EventRegistrationWon: 2}, count(), "the draw's rights, no loser")
	recordLost(true)
	recordLost(true)
	require.Equal(t, map[seckill.EventType]int{seckill.EventRegistrationWon: 2, seckill.EventRegistrationLost: len(users)},
		count(), "nobody bought: every registrant lost, once")
}
