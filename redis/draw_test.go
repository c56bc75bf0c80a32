package redis_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A draw's gate: only a live, unused right buys, once; a lapsed right, a
// used one and no right at all hear NOT_ELIGIBLE and move no stock; the
// attempt that used a right, run again, answers as it did.
func TestDrawRightsGate(t *testing.T) {
	testenv.OnTopologies(t, func(t *testing.T, server string) {
		e, sess := gateEnvOn(t, server, 10, 2)
		sess.Mode = seckill.ModeDraw
		ctx := context.Background()
		now := time.Now()
		require.NoError(t, e.Gate.LoadRights(ctx, sess.ID, []seckill.DrawEntry{
			{Position: 1, UserID: 1, RightUntil: now.Add(time.Minute)},
			{Position: 2, UserID: 2, RightUntil: now.Add(-time.Second)},
			{Position: 3, UserID: 3}, // waiting: nothing written
		}))
		// The caller's clock is an hour slow: the lapse is Redis's clock's
		// call, the one the passes of rights read.
		slow := now.Add(-time.Hour)
		notEligible := func(user int64, orderNo string) {
			_, left, err := e.Gate.Admit(ctx, sess, user, 1, orderNo, "t", slow)
			var se *seckill.Error
			require.True(t, errors.As(err, &se) && se.Code == seckill.ENOTELIGIBLE, "user %d: %v", user, err)
			require.Equal(t, 9, left, "no stock moved (%s)", orderNo)
		}
		resv, left, err := e.Gate.Admit(ctx, sess, 1, 1, "d-1", "t", now)
		require.NoError(t, err)
		require.Equal(t, 9, left)
		_, left, err = e.Gate.Admit(ctx, sess, 1, 1, "d-1", "t", now)
		require.NoError(t, err, "the attempt that used the right, run again, answers as it did")
		require.Equal(t, 9, left)
		notEligible(1, "d-1b")
		notEligible(2, "d-2")
		notEligible(3, "d-3")
		notEligible(4, "d-4")
		require.NoError(t, e.Gate.LoadRights(ctx, sess.ID, []seckill.DrawEntry{{Position: 1, UserID: 1, RightUntil: now.Add(time.Hour)}}))
		notEligible(1, "d-1c") // a used right is never handed back by a re-run
		// A resume's later end replaces an unused right's; an earlier one
		// does not.
		later := now.Add(2 * time.Hour)
		require.NoError(t, e.Gate.LoadRights(ctx, sess.ID, []seckill.DrawEntry{{Position: 2, UserID: 2, RightUntil: later}}))
		require.NoError(t, e.Gate.LoadRights(ctx, sess.ID, []seckill.DrawEntry{{Position: 2, UserID: 2, RightUntil: now.Add(time.Hour)}}))
		field, err := e.Gate.Right(ctx, sess.ID, 2, 0)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(later.UnixMilli(), 10), field)
		field, err = e.Gate.Right(ctx, sess.ID, 4, 0)
		require.NoError(t, err)
		require.Empty(t, field, "no right")
		rights, err := e.Gate.Rights(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, "u", rights["1"])
		resv.SKUID = sess.SKUID
		_, err = e.DB.CreateOrder(ctx, &seckill.OrderRequest{Reservation: *resv, PriceCents: sess.PriceCents,
			PayTimeout: time.Minute}, time.Now().Add(time.Minute))
		require.NoError(t, err)
		e.RequireInvariants(sess.ID)
	})
}
