package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/tick"
)

// SessionLives makes sure every session not yet ended has its life (its
// SessionWorkflow: preheat before the start, retire after the end). The
// API starts it when it creates the session; this is the safety net for a
// session created while Temporal did not answer, or before lives existed.
type SessionLives struct {
	Store interface {
		OpenSessions(ctx context.Context, now time.Time, limit int) ([]*seckill.Session, error)
	}
	Starter interface {
		StartSession(ctx context.Context, sessionID int64) (bool, error)
	}
	Log *slog.Logger

	// known holds the open sessions whose life this process saw running
	// (started it, or found it started): asked about once, not every pass.
	known map[int64]bool
}

// maxLives bounds the open sessions one pass looks at (soonest first).
const maxLives = 1000

// Pass starts the life of each open session that has none and returns how
// many it started; a session whose life ran already (retired) is not
// started again.
func (l *SessionLives) Pass(ctx context.Context) (int, error) {
	open, err := l.Store.OpenSessions(ctx, time.Now(), maxLives)
	if err != nil {
		return 0, err
	}
	started := 0
	seen := make(map[int64]bool, len(open))
	defer func() { l.known = seen }() // forget sessions no longer open
	for _, s := range open {
		if l.known[s.ID] {
			seen[s.ID] = true
			continue
		}
		ok, err := l.Starter.StartSession(ctx, s.ID)
		if err != nil {
			return started, err
		}
		seen[s.ID] = true
		if ok {
			started++
			l.Log.Info("session life started by the worker", "session_id", s.ID)
		}
	}
	return started, nil
}

// Run passes at once and then every interval until ctx ends.
func (l *SessionLives) Run(ctx context.Context, interval time.Duration) {
	pass := func() {
		if _, err := l.Pass(ctx); err != nil && ctx.Err() == nil {
			l.Log.Warn("session lives pass failed", "error", err)
		}
	}
	pass()
	tick.Every(ctx, interval, pass)
}
