package sessions_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/sessions"
)

// A load that read the session before a change and returns after the
// change forgot it is not kept, and a read after the Forget does not join
// it: an operator's pause holds from its answer on.
func TestCacheForgetOutranksALoadInFlight(t *testing.T) {
	var paused atomic.Bool
	release := make(chan struct{})
	var loads atomic.Int32
	c := sessions.NewCache(time.Minute, func(ctx context.Context, id int64) (*seckill.Session, error) {
		s := &seckill.Session{ID: id, Paused: paused.Load()}
		if loads.Add(1) == 1 {
			<-release // the first load read the row before the pause, and is slow
		}
		return s, nil
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s, err := c.Get(context.Background(), 7)
		require.NoError(t, err)
		require.False(t, s.Paused, "the load that began before the pause")
	}()
	require.Eventually(t, func() bool { return loads.Load() == 1 }, 5*time.Second, time.Millisecond)
	paused.Store(true)
	c.Forget(7) // the pause committed
	s, err := c.Get(context.Background(), 7)
	require.NoError(t, err)
	require.True(t, s.Paused, "a read after the Forget loads afresh")
	close(release)
	wg.Wait()
	s, err = c.Get(context.Background(), 7)
	require.NoError(t, err)
	require.True(t, s.Paused, "the stale load was not kept")
}
