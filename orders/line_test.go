package orders_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/orders"
)

// backlogs are sales' backlogs as the test sets them.
type backlogs map[int64]int

func (b backlogs) Backlog(_ context.Context, id int64) (int, error) {
	if n, ok := b[id]; ok {
		return n, nil
	}
	return 0, seckill.Errorf(seckill.EUNAVAILABLE, "redis down")
}

// A QUEUED order's poll waits the shop page's second until the line has
// been seen going down, then a quarter of what the whole line takes at
// its pace, within one and five seconds; a line that stands still or
// grows keeps the last pace; each sale has its own; an error says so.
func TestLineWait(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	b := backlogs{1: 5000, 2: 40}
	l := orders.NewLine(b, func() time.Time { return now })
	wait := func(id int64) (int, time.Duration) {
		t.Helper()
		n, after, err := l.Wait(ctx, id)
		require.NoError(t, err)
		return n, after
	}

	n, after := wait(1)
	require.Equal(t, 5000, n)
	require.Equal(t, time.Second, after, "no pace yet")
	now, b[1] = now.Add(500*time.Millisecond), 4900
	_, after = wait(1)
	require.Equal(t, time.Second, after, "half a second measures no pace")

	// 5,000 → 4,800 in a second: 200 a second, 24 s for the line.
	now, b[1] = now.Add(500*time.Millisecond), 4800
	_, after = wait(1)
	require.Equal(t, 5*time.Second, after, "a long line: at most five seconds")

	// Standing still for ten seconds (Temporal slow): the pace stands.
	now = now.Add(10 * time.Second)
	_, after = wait(1)
	require.Equal(t, 5*time.Second, after)

	// 4,800 → 4,000 in a second: the pace is the mean of 200 and 800 a
	// second, 500; 4,000 take 8 s, a quarter of it 2 s.
	now, b[1] = now.Add(time.Second), 4000
	n, after = wait(1)
	require.Equal(t, 4000, n)
	require.Equal(t, 2*time.Second, after)

	// 4,000 → 100: a short line, at least a second.
	now, b[1] = now.Add(time.Second), 100
	_, after = wait(1)
	require.Equal(t, time.Second, after)

	// The other sale has measured nothing.
	n, after = wait(2)
	require.Equal(t, 40, n)
	require.Equal(t, time.Second, after)

	_, _, err := l.Wait(ctx, 3)
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err))
}
