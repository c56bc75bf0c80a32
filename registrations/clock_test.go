package registrations_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/registrations"
)

// One clock closes registration, the database's: an API host whose clock
// is a minute behind still hears CONFLICT once MySQL's clock passed
// register_until, and no row is written. A draw takes no registration
// before its commitment is published.
func TestRegistrationClosesByTheDatabaseClock(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoAPI: true, NoWorker: true})
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	sess := &seckill.Session{SKUID: 1, Title: "draw", PriceCents: 100, TotalStock: 1, PerUserLimit: 1,
		StartAt: now.Add(time.Hour), EndAt: now.Add(2 * time.Hour), Mode: seckill.ModeDraw,
		RegisterFrom: now.Add(-time.Hour), RegisterUntil: now.Add(2 * time.Second), RightTTLSeconds: 60}
	require.NoError(t, e.DB.CreateSession(ctx, sess, nil))
	desk := &registrations.Desk{Store: e.DB, Set: e.Gate}
	_, err := desk.Register(ctx, sess, 1, 0)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "no commitment yet: %v", err)
	require.ErrorContains(t, err, "commitment")

	sess.DrawCommitment = e.CommitDraw(sess.ID)
	created, err := desk.Register(ctx, sess, 1, 0)
	require.NoError(t, err)
	require.True(t, created)
	r, err := e.DB.Registration(ctx, sess.ID, 1)
	require.NoError(t, err)
	require.True(t, r.At.Before(sess.RegisterUntil), "stamped by the database's clock, in the window")

	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(e.DB.PublishRegistrants(ctx, sess.ID)),
		"the list is not published while the database's clock says registration is open")
	raw, err := sql.Open("mysql", e.DSN)
	require.NoError(t, err)
	defer raw.Close()
	e.Eventually(10*time.Second, "register_until passes by the database's clock", func() error {
		var closed bool
		if err := raw.QueryRow("SELECT UTC_TIMESTAMP(6) >= ?", sess.RegisterUntil).Scan(&closed); err != nil || closed {
			return err
		}
		return errors.New("still open")
	})
	behind := &registrations.Desk{Store: e.DB, Set: e.Gate, Now: func() time.Time { return sess.RegisterUntil.Add(-time.Minute) }}
	_, err = behind.Register(ctx, sess, 2, 0)
	require.Equal(t, seckill.ECONFLICT, seckill.ErrorCode(err), "closed by the database's clock: %v", err)
	_, err = e.DB.Registration(ctx, sess.ID, 2)
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "no row written")
	again, err := behind.Register(ctx, sess, 1, 0)
	require.NoError(t, err, "a registration made in the window, asked again, is still answered")
	require.False(t, again)

	// Closed: the list is published once, its count and digest fixed.
	require.NoError(t, e.DB.PublishRegistrants(ctx, sess.ID))
	_, err = raw.Exec("INSERT INTO registrations (session_id, user_id, created_at) SELECT id, 3, register_from FROM sessions WHERE id = ?", sess.ID)
	require.NoError(t, err)
	require.NoError(t, e.DB.PublishRegistrants(ctx, sess.ID))
	s, _, err := e.DB.Session(ctx, sess.ID)
	require.NoError(t, err)
	require.Equal(t, 1, *s.RegistrantsCount, "published once")
	require.Equal(t, hex.EncodeToString(testenv.DigestByHand([]int64{1})), s.RegistrantsDigest)
}
