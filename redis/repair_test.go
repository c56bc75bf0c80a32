package redis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

// admitsMeanwhile is the MySQL side of a repair during which a shopper
// buys: the purchase lands between the repair's check and its rebuild.
type admitsMeanwhile struct {
	*mysql.DB
	buy func()
}

func (d admitsMeanwhile) LiveHoldings(ctx context.Context, sessionID int64) ([]seckill.Reservation, error) {
	d.buy()
	return d.DB.LiveHoldings(ctx, sessionID)
}

// A repair never drops a reservation made while it runs: nothing pauses
// admissions between its check and its rebuild, so the rebuild happens
// only if the session's Redis state is still the one it checked. Run
// again once the sale is quiet, it repairs.
func TestRepairKeepsAPurchaseMadeMeanwhile(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	sess := e.Session(5, 1, 100)
	ctx := context.Background()
	require.NoError(t, e.Redis.Set(ctx, e.Prefix+":{s"+itoa(sess.ID)+"}:stock", 3, 0).Err(), "Redis drifted: 3 where MySQL has 5")

	bought := false
	db := admitsMeanwhile{DB: e.DB, buy: func() {
		if !bought {
			bought = true
			_, _, err := e.Gate.Admit(ctx, sess, 7, 1, itoa(sess.ID)+"-meanwhile", "t", time.Now())
			require.NoError(t, err)
		}
	}}
	_, rep, err := seckill.RepairRedis(ctx, db, e.Gate, sess.ID)
	require.NoError(t, err)
	require.False(t, rep.Repaired, "%+v", rep)
	require.Contains(t, rep.Skipped, "changed the session's Redis state during the repair")
	r, err := e.Gate.Reservation(ctx, itoa(sess.ID)+"-meanwhile")
	require.NoError(t, err, "the purchase made during the repair is still reserved")
	require.Equal(t, int64(7), r.UserID)
	stock, _, err := e.Gate.Stock(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 2, stock, "nothing rebuilt")

	// Quiet (the reservation released, as its order would be): repaired.
	_, err = e.Gate.Release(ctx, sess.ID, itoa(sess.ID)+"-meanwhile")
	require.NoError(t, err)
	after, rep, err := seckill.RepairRedis(ctx, db, e.Gate, sess.ID)
	require.NoError(t, err)
	require.True(t, rep.Repaired, "%+v", rep)
	require.Equal(t, 5, after.RedisStock)
	require.True(t, after.OK, "%v", after.Problems)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
