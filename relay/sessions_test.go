package relay_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/relay"
)

type openSessions []int64

func (o *openSessions) OpenSessions(context.Context, time.Time, int) ([]*seckill.Session, error) {
	out := make([]*seckill.Session, len(*o))
	for i, id := range *o {
		out[i] = &seckill.Session{ID: id}
	}
	return out, nil
}

// lives answers StartSession like Temporal: started once per session.
type lives struct{ asked, running map[int64]int }

func (l *lives) StartSession(_ context.Context, id int64) (bool, error) {
	l.asked[id]++
	l.running[id]++
	return l.running[id] == 1, nil
}

// Every open session gets a life, started once; a pass asks Temporal only
// about sessions it has not seen with a life, and forgets closed ones.
func TestSessionLivesStartEachOnce(t *testing.T) {
	open := openSessions{1, 2}
	l := &lives{asked: map[int64]int{}, running: map[int64]int{}}
	r := &relay.SessionLives{Store: &open, Starter: l, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	n, err := r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	open = append(open, 3)
	n, err = r.Pass(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the new session")
	require.Equal(t, map[int64]int{1: 1, 2: 1, 3: 1}, l.asked, "a session seen with a life is not asked about again")
}
