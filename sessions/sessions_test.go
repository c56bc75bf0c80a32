package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/metrics"
	"github.com/seckill/seckill/sessions"
)

// lives records the session lives started and told of changes; down, it
// fails every call, as Temporal away.
type lives struct {
	down             bool
	started, changed []int64
}

func (l *lives) StartSession(_ context.Context, id int64) (bool, error) {
	if l.down {
		return false, errors.New("temporal: unavailable")
	}
	l.started = append(l.started, id)
	return true, nil
}

func (l *lives) SessionChanged(_ context.Context, id int64) error {
	if l.down {
		return errors.New("temporal: unavailable")
	}
	l.changed = append(l.changed, id)
	return nil
}

func newControls(t *testing.T) (*testenv.Env, *sessions.Controls, *lives) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	l := &lives{}
	return e, &sessions.Controls{Store: e.DB, Stock: e.Gate, Lives: l, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, l
}

// A session is created even when its life cannot be started (the worker
// starts it later); an add of stock lands in MySQL and in Redis once,
// however often its request is retried; an end tells the session's life.
func TestControlsCreateAndChange(t *testing.T) {
	e, c, l := newControls(t)
	m := metrics.New()
	c.Applied = m.SessionChanged
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	l.down = true
	sess := &seckill.Session{SKUID: 1, Title: "t", PriceCents: 100, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(-time.Second), EndAt: now.Add(time.Hour)}
	require.NoError(t, c.Create(ctx, sess, &seckill.SessionChange{Actor: "ana", ActorRole: seckill.RoleAdmin,
		From: "10.0.0.1", RequestID: "trace", TraceID: "trace"}))
	require.NotZero(t, sess.ID)
	require.Empty(t, l.started)
	created, err := e.DB.SessionAudit(ctx, sess.ID)
	require.NoError(t, err)
	require.Len(t, created, 1, "the creation is the audit's first row")
	require.Equal(t, seckill.ActionCreate, created[0].Action)
	require.Equal(t, "ana", created[0].Actor)
	require.Equal(t, seckill.RoleAdmin, created[0].ActorRole)
	l.down = false

	p, err := c.Preheat(ctx, sess.ID, false, "trace")
	require.NoError(t, err)
	require.Equal(t, 3, p.Stock)
	add := &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionAddStock, Add: 2, Actor: "ops", RequestID: "add-1"}
	for i := 0; i < 2; i++ {
		ch := *add
		done, err := c.Change(ctx, &ch)
		require.NoError(t, err)
		require.Equal(t, i == 0, done.Applied)
		require.Equal(t, 5, *done.RedisStock, "added once")
		require.Equal(t, 5, done.Session.TotalStock)
	}
	_, dbStock, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 5, dbStock)

	done, err := c.Change(ctx, &seckill.SessionChange{SessionID: sess.ID, Action: seckill.ActionEnd, Actor: "ops", RequestID: "end-1"})
	require.NoError(t, err)
	require.Nil(t, done.RedisStock)
	require.Equal(t, []int64{sess.ID}, l.changed)
	require.Equal(t, 1.0, testutil.ToFloat64(m.SessionChanges.WithLabelValues("add_stock")), "the replay is not counted")
	require.Equal(t, 1.0, testutil.ToFloat64(m.SessionChanges.WithLabelValues("end")))
	require.Equal(t, 0.0, testutil.ToFloat64(m.SessionChanges.WithLabelValues("pause")))
	e.RequireInvariants(sess.ID)
}

// An ended session is never preheated again: its Redis state was retired
// (or is about to be), and loading it would put it back where the relays
// look. A session with orders but no Redis stock asks for the rebuild.
func TestControlsPreheat(t *testing.T) {
	e, c, _ := newControls(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	ended := &seckill.Session{SKUID: 1, Title: "t", PriceCents: 100, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(-2 * time.Hour), EndAt: now.Add(-time.Hour)}
	require.NoError(t, e.DB.CreateSession(ctx, ended, nil))
	_, err := c.Preheat(ctx, ended.ID, false, "trace")
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err))
	_, preheated, err := e.Gate.Stock(ctx, ended.ID)
	require.NoError(t, err)
	require.False(t, preheated, "nothing loaded")

	sess := e.Session(4, 1, 100)
	p, err := c.Preheat(ctx, sess.ID, false, "trace")
	require.NoError(t, err)
	require.Equal(t, 4, p.Stock, "live stock is never overwritten")
	p, err = c.Preheat(ctx, sess.ID, true, "trace")
	require.NoError(t, err)
	require.True(t, p.Rebuilt)
	require.Equal(t, 0, *p.Reservations)
	e.RequireInvariants(sess.ID)
}

// A reserved sale's registrants reach the set admission checks at the
// preheat, and come back with the forced rebuild after Redis lost them:
// MySQL is their truth.
func TestPreheatCopiesTheRegistrants(t *testing.T) {
	e, c, _ := newControls(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "t", PriceCents: 100, TotalStock: 3, PerUserLimit: 1,
		StartAt: now.Add(time.Hour), EndAt: now.Add(2 * time.Hour),
		Mode: seckill.ModeReserved, RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(time.Hour)}
	require.NoError(t, c.Create(ctx, sess, &seckill.SessionChange{Actor: "ana", ActorRole: seckill.RoleAdmin, RequestID: "r", TraceID: "r"}))
	const registrants = 12_001 // more than one page of the copy
	for u := int64(1); u <= registrants; u += 1000 {
		for v := u; v < u+1000 && v <= registrants; v++ {
			_, err := e.DB.Register(ctx, sess.ID, v, 0)
			require.NoError(t, err)
		}
	}
	registered := func(u int64) bool {
		in, err := e.Gate.Registered(ctx, sess.ID, u, 0)
		require.NoError(t, err)
		return in
	}
	require.False(t, registered(1))
	_, err := c.Preheat(ctx, sess.ID, false, "trace")
	require.NoError(t, err)
	for _, u := range []int64{1, 5000, 5001, registrants} {
		require.True(t, registered(u), "registrant %d", u)
	}
	require.False(t, registered(registrants+1))

	rep, err := seckill.Reconcile(ctx, e.DB, e.Gate, sess.ID)
	require.NoError(t, err)
	require.Equal(t, &seckill.RegistrantCounts{DB: registrants, Redis: registrants}, rep.Registrants)
	require.True(t, rep.OK, "%v", rep.Problems)

	// Redis loses the set: reconcile says so, and a preheat (the stock is
	// still there, so it changes nothing else) brings it back, as does
	// the forced rebuild.
	reg := fmt.Sprintf("%s:{s%d}:reg", e.Prefix, sess.ID)
	require.NoError(t, e.Redis.Del(ctx, reg).Err())
	rep, err = seckill.Reconcile(ctx, e.DB, e.Gate, sess.ID)
	require.NoError(t, err)
	require.False(t, rep.OK)
	require.Contains(t, rep.Problems[0], "registrants in MySQL but 0 in Redis")
	_, err = c.Preheat(ctx, sess.ID, false, "trace")
	require.NoError(t, err)
	require.True(t, registered(1))
	require.NoError(t, e.Redis.Del(ctx, reg).Err())
	_, err = c.Preheat(ctx, sess.ID, true, "trace")
	require.NoError(t, err)
	require.True(t, registered(1))
	require.True(t, registered(registrants))
	e.RequireInvariants(sess.ID)
}

// The currencies a sale may be priced in are those the world pays in, in
// lower case: the newer ones too (ves, sle, zwg), never a typo, a special
// or test code, or the code in upper case (the providers take lower).
func TestCheckCurrency(t *testing.T) {
	for _, c := range []string{"usd", "eur", "jpy", "cny", "gbp", "ves", "sle", "zwg"} {
		require.NoError(t, sessions.CheckCurrency(c), c)
	}
	for _, c := range []string{"", "uds", "xxx", "xts", "xau", "USD", "us", "usdd", "u$d"} {
		require.Equal(t, seckill.EINVALID, seckill.ErrorCode(sessions.CheckCurrency(c)), "%q", c)
	}
}
