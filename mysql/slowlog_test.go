package mysql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill"
	"github.com/seckill/seckill/internal/testenv"
	"github.com/seckill/seckill/mysql"
)

// A statement slower than the threshold is logged at warn with its
// shape (placeholders, never the values), its duration, its rows and the
// trace id its context carries; a fast one logs nothing, and threshold 0
// logs none.
func TestSlowQueriesAreLoggedWithTheirTraceID(t *testing.T) {
	e := testenv.New(t, testenv.Options{NoWorker: true, NoAPI: true})
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	e.DB.LogSlowQueries(mysql.SlowQueries{Log: log, Threshold: 200 * time.Millisecond, TraceID: seckill.TraceIDFrom})
	ctx := seckill.WithTraceID(context.Background(), "trace-slow")

	require.NoError(t, e.DB.RawForTest(ctx, "SELECT ? + 1", 41))
	require.Empty(t, out.String(), "a fast statement is not logged")

	require.NoError(t, e.DB.RawForTest(ctx, "SELECT SLEEP(?)", 0.3))
	var rec map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rec), out.String())
	require.Equal(t, "WARN", rec["level"])
	require.Equal(t, "slow query", rec["msg"])
	require.Equal(t, "SELECT SLEEP(?)", rec["sql"], "the statement without its values")
	require.GreaterOrEqual(t, rec["duration"], float64(300*time.Millisecond))
	require.Equal(t, float64(1), rec["rows"])
	require.Equal(t, "trace-slow", rec["trace_id"])

	out.Reset()
	require.NoError(t, e.DB.RawForTest(context.Background(), "SELECT SLEEP(?)", 0.3))
	require.NotContains(t, out.String(), "trace_id", "no trace id in the context, none logged")
	require.Contains(t, out.String(), "slow query")

	out.Reset()
	e.DB.LogSlowQueries(mysql.SlowQueries{Log: log, Threshold: 0})
	require.NoError(t, e.DB.RawForTest(ctx, "SELECT SLEEP(?)", 0.3))
	require.Empty(t, out.String(), "SECKILL_MYSQL_SLOW=0 logs nothing")
}
