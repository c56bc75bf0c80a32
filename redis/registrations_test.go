package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
)

// A reserved sale under a burst of shoppers who never registered, mixed
// with its registrants, coalesced into shared script calls: every
// non-registrant hears NOT_ELIGIBLE and moves nothing (no stock, no
// per-user mark, no idempotency pin), every registrant buys within the
// limit, and stock plus reservations is the total.
func TestOnlyRegistrantsAreAdmitted(t *testing.T) {
	testenv.OnTopologies(t, func(t *testing.T, server string) {
		const stock, registrants, strangers = 50, 40, 300
		e, sess := gateEnvOn(t, server, stock, 1)
		sess.Mode = seckill.ModeReserved
		ctx := context.Background()
		for u := int64(1); u <= registrants; u++ {
			require.NoError(t, e.Gate.Register(ctx, sess.ID, u, 0))
		}
		require.NoError(t, e.Gate.Register(ctx, sess.ID, 1, 0), "registering again changes nothing")

		var won, notEligible, overLimit atomic.Int64
		var wg sync.WaitGroup
		try := func(user int64, i int) {
			defer wg.Done()
			a := &seckill.Attempt{Session: sess, UserID: user, Quantity: 1, OrderNo: fmt.Sprintf("%d-u%d-%d", sess.ID, user, i),
				TraceID: "t", Now: time.Now()}
			if i == 1 {
				a.IdempotencyKey, a.Fingerprint = fmt.Sprintf("key-%d", user), "1"
			}
			_, err := e.Gate.AdmitAttempt(ctx, a)
			switch seckill.ErrorCode(err) {
			case "":
				won.Add(1)
				require.LessOrEqual(t, user, int64(registrants), "user %d never registered", user)
			case seckill.ENOTELIGIBLE:
				notEligible.Add(1)
				require.Greater(t, user, int64(registrants), "registrant %d refused", user)
			case seckill.ELIMIT:
				overLimit.Add(1)
			default:
				t.Errorf("user %d: %v", user, err)
			}
		}
		for i := 0; i < 2; i++ {
			for u := int64(1); u <= registrants+strangers; u++ {
				wg.Add(1)
				go try(u, i)
			}
		}
		wg.Wait()
		require.EqualValues(t, registrants, won.Load(), "every registrant bought once")
		require.EqualValues(t, registrants, overLimit.Load(), "and was held to the limit on the second try")
		require.EqualValues(t, 2*strangers, notEligible.Load())
		left, _, err := e.Gate.Stock(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, stock-registrants, left, "the strangers moved no stock")
		snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
		require.NoError(t, err)
		require.Len(t, snap.Reservations, registrants)
		require.Zero(t, snap.MarkMismatches)
	})
}
