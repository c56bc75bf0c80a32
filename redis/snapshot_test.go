package redis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/testenv"
)

// The snapshot is one script: while admissions and releases run
// concurrently, every snapshot's stock plus its reservations is exactly the
// total, and the per-user marks match the reservations.
func TestSessionSnapshotIsOneInstant(t *testing.T) {
	testenv.OnTopologies(t, testSessionSnapshotIsOneInstant)
}

func testSessionSnapshotIsOneInstant(t *testing.T, server string) {
	e, sess := gateEnvOn(t, server, 30, 2)
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				no := fmt.Sprintf("%d-w%d-%d", sess.ID, w, i)
				if _, _, err := e.Gate.Admit(ctx, sess, int64(w*100000+i%7), 1, no, "t", time.Now()); err != nil {
					continue // sold out or over the limit: nothing to release
				}
				if i%3 != 0 {
					_, err := e.Gate.Release(ctx, sess.ID, no)
					assert.NoError(t, err)
				}
			}
		}()
	}
	snapshots := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); snapshots++ {
		snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
		require.NoError(t, err)
		reserved := 0
		for _, q := range snap.Reservations {
			reserved += q
		}
		require.Equal(t, sess.TotalStock, snap.Stock+reserved, "snapshot %d", snapshots)
		require.Zero(t, snap.MarkMismatches, "snapshot %d", snapshots)
		require.Equal(t, snap.Pending, len(snap.Reservations), "every reservation here keeps its pending-start entry")
	}
	stop.Store(true)
	wg.Wait()
	require.Greater(t, snapshots, 20)
	// Nothing becomes an order here: give every reservation back.
	snap, err := e.Gate.SessionSnapshot(ctx, sess.ID)
	require.NoError(t, err)
	for no := range snap.Reservations {
		_, err := e.Gate.Release(ctx, sess.ID, no)
		require.NoError(t, err)
	}
	e.RequireInvariants(sess.ID)
}
