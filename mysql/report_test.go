package mysql_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
)

// The snapshot is one consistent read: while orders are created and closed
// concurrently (stock moving both ways), every snapshot's stock plus the
// units its orders hold is exactly the total, and the statuses asked for
// agree with the counts of the same instant.
func TestSessionSnapshotIsOneInstant(t *testing.T) {
	e, sess := store(t, 40, 1)
	ctx := context.Background()
	var stop atomic.Bool
	var mu sync.Mutex
	var created []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				req := request(sess, fmt.Sprintf("%d-w%d-%d", sess.ID, w, i), int64(w*100000+i), 1, 1)
				o, err := e.DB.CreateOrder(ctx, req, time.Now().Add(time.Minute))
				if !assert.NoError(t, err) || o.Status != seckill.StatusWaitPay {
					continue
				}
				mu.Lock()
				created = append(created, req.OrderNo)
				mu.Unlock()
				if i%2 == 0 {
					_, _, err := e.DB.CloseOrder(ctx, req, "test")
					assert.NoError(t, err)
				}
			}
		}()
	}
	snapshots := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); snapshots++ {
		mu.Lock()
		nos := append([]string(nil), created...)
		mu.Unlock()
		snap, err := e.DB.SessionSnapshot(ctx, sess.ID, nos, time.Now())
		require.NoError(t, err)
		require.Equal(t, sess.TotalStock, snap.DBStock+snap.HeldQty, "snapshot %d: %+v", snapshots, snap)
		byStatus := map[seckill.Status]int{}
		for _, st := range snap.Statuses {
			byStatus[st]++
		}
		for st, n := range byStatus {
			require.LessOrEqual(t, n, snap.Orders[st], "statuses read at the same instant as the counts")
		}
		require.Len(t, snap.Statuses, len(nos), "every order created before the snapshot is in it")
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d snapshots, %d orders", snapshots, len(created))
	require.Greater(t, snapshots, 20)
	e.RequireInvariants(sess.ID)
}
