package sessions_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/sessions"
)

// openSessions is MySQL's list of open sessions, counting its reads and
// failing while down is set.
type openSessions struct {
	reads atomic.Int32
	down  atomic.Bool
}

func (o *openSessions) OpenSessions(context.Context, time.Time, int) ([]*seckill.Session, error) {
	o.reads.Add(1)
	if o.down.Load() {
		return nil, errors.New("mysql: connection refused")
	}
	return []*seckill.Session{{ID: 1, Title: "Drop", TotalStock: 5, StartAt: time.Now().Add(-time.Minute), EndAt: time.Now().Add(time.Hour)}}, nil
}

type stockOf int

func (s stockOf) Stock(context.Context, int64) (int, bool, error) { return int(s), true, nil }
func (s stockOf) ItemStocks(context.Context, int64) (map[int64]int, error) {
	return nil, nil
}

// Every shopper's page asks for the list at once: one read answers them
// all however their calls interleave with it, the answer is kept for its
// TTL, and when MySQL fails the last good answer is served.
func TestViewsListOneReadPerTTL(t *testing.T) {
	open := &openSessions{}
	v := &sessions.Views{Stock: stockOf(3), Open: open, TTL: time.Hour, Now: time.Now, Currency: "USD"}
	var wg sync.WaitGroup
	bodies := make([][]byte, 200)
	for i := range bodies {
		wg.Go(func() {
			b, err := v.List(context.Background())
			require.NoError(t, err)
			bodies[i] = b
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, open.reads.Load(), "concurrent askers share one read")
	for _, b := range bodies {
		require.Equal(t, bodies[0], b)
	}
	require.Contains(t, string(bodies[0]), `"remaining_stock":3`)

	expired := &sessions.Views{Stock: stockOf(3), Open: open, TTL: -time.Second, Now: time.Now, Currency: "USD"}
	good, err := expired.List(context.Background())
	require.NoError(t, err)
	open.down.Store(true)
	stale, err := expired.List(context.Background())
	require.NoError(t, err, "a failed read serves the last good answer")
	require.Equal(t, good, stale)

	never := &sessions.Views{Stock: stockOf(3), Open: open, TTL: time.Hour, Now: time.Now}
	_, err = never.List(context.Background())
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "nothing good to serve")
}
