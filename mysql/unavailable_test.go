package mysql_test

import (
	"context"
	"testing"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

// A database that cannot be reached is UNAVAILABLE, like Redis: reads,
// writes and transactions alike, the driver error kept in the chain; and
// answers (not found) stay what they are, before, during and after.
func TestOutageIsUnavailable(t *testing.T) {
	testenv.SkipShort(t, "MariaDB")
	e, sess := store(t, 5, 1)
	x := testenv.StartToxi(t, "mysql", "127.0.0.1:3306")
	cfg, err := mysqldriver.ParseDSN(e.DSN)
	require.NoError(t, err)
	cfg.Addr, cfg.Timeout = x.Addr, time.Second
	ctx := context.Background()
	db, err := mysql.Open(ctx, cfg.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	_, err = db.Order(ctx, "1-missing")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err))
	_, _, err = db.Session(ctx, sess.ID)
	require.NoError(t, err)

	x.SetDown(true)
	for name, call := range map[string]func() error{
		"read":        func() error { _, err := db.Order(ctx, "1-missing"); return err },
		"session":     func() error { _, _, err := db.Session(ctx, sess.ID); return err },
		"transaction": func() error { _, err := db.CreateOrder(ctx, request(sess, "1-down", 7, 1, 1), time.Now()); return err },
		"ping":        func() error { return db.Ping(ctx) },
	} {
		err := call()
		require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%s: %v", name, err)
	}
	// A deadline that runs out is the same failure.
	dctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	_, err = db.Order(dctx, "1-missing")
	require.Equal(t, seckill.EUNAVAILABLE, seckill.ErrorCode(err), "%v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded, "the cause stays in the chain")

	x.SetDown(false)
	require.Eventually(t, func() bool { return db.Ping(ctx) == nil }, 10*time.Second, 50*time.Millisecond)
	_, err = db.Order(ctx, "1-missing")
	require.Equal(t, seckill.ENOTFOUND, seckill.ErrorCode(err), "heals by itself: %v", err)
	e.RequireInvariants(sess.ID)
}
