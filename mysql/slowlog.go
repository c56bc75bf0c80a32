package mysql

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// SlowQueries says where statements slower than Threshold are logged:
// at warn, through Log, with the statement, its duration, its rows and
// the trace id TraceID reads from the statement's context. Threshold 0
// logs none.
type SlowQueries struct {
	Log       *slog.Logger
	Threshold time.Duration
	// TraceID is the request's trace id a context carries ("" when
	// none); nil: none is logged.
	TraceID func(context.Context) string
}

// LogSlowQueries sends GORM's statements slower than s.Threshold to
// s.Log. Call it right after Open, before the store is used. Statements
// are logged with their placeholders, never their values: a value may be
// a shopper's id, a payment's id or an operator token's hash, and the
// shape of the statement is what an operator looks for.
func (db *DB) LogSlowQueries(s SlowQueries) {
	if s.Threshold <= 0 || s.Log == nil {
		db.gorm.Logger = logger.Discard
		return
	}
	db.gorm.Logger = slowLogger{s}
}

// GORM's Scan renders its statement through a recorder of its own, whose
// filter is process-wide: it keeps the values out too. This package is
// the process's one user of GORM.
func init() {
	logger.RecorderParamsFilter = func(_ context.Context, sql string, _ ...interface{}) (string, []interface{}) {
		return sql, nil
	}
}

// slowLogger is GORM's logger.Interface over slog, for slow statements
// only: GORM's own messages (Info, Warn, Error) are the errors its
// callers already return.
type slowLogger struct{ SlowQueries }

func (l slowLogger) LogMode(logger.LogLevel) logger.Interface    { return l }
func (slowLogger) Info(context.Context, string, ...interface{})  {}
func (slowLogger) Warn(context.Context, string, ...interface{})  {}
func (slowLogger) Error(context.Context, string, ...interface{}) {}

// ParamsFilter keeps the statement's values out of the log (GORM asks
// before it renders the statement with them).
func (slowLogger) ParamsFilter(_ context.Context, sql string, _ ...interface{}) (string, []interface{}) {
	return sql, nil
}

func (l slowLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	took := time.Since(begin)
	if took < l.Threshold {
		return
	}
	sql, rows := fc()
	attrs := []slog.Attr{slog.String("sql", sql), slog.Duration("duration", took), slog.Int64("rows", rows)}
	if l.TraceID != nil {
		if id := l.TraceID(ctx); id != "" {
			attrs = append(attrs, slog.String("trace_id", id))
		}
	}
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	l.Log.LogAttrs(ctx, slog.LevelWarn, "slow query", attrs...)
}
