package mysql

import (
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// Trace makes every statement GORM runs a client span of the context's
// trace, with the database semantic conventions (db.system.name,
// db.operation.name, db.query.text as sent: placeholders, never the
// values; db.namespace). Our own callbacks rather than
// gorm.io/plugin/opentelemetry, which links the ClickHouse and PostgreSQL
// drivers into the binary. The statements of a batched transaction
// (batch.go) are spans of the trace of the call that runs the batch.
func (db *DB) Trace() error {
	tracer := otel.Tracer("github.com/seckill/seckill/mysql")
	name := db.gorm.Migrator().CurrentDatabase()
	start, cb := startSpan(tracer, name), db.gorm.Callback()
	return errors.Join(
		cb.Create().Before("gorm:create").Register("otel:start", start),
		cb.Create().After("gorm:create").Register("otel:end", endSpan),
		cb.Query().Before("gorm:query").Register("otel:start", start),
		cb.Query().After("gorm:query").Register("otel:end", endSpan),
		cb.Update().Before("gorm:update").Register("otel:start", start),
		cb.Update().After("gorm:update").Register("otel:end", endSpan),
		cb.Delete().Before("gorm:delete").Register("otel:start", start),
		cb.Delete().After("gorm:delete").Register("otel:end", endSpan),
		cb.Row().Before("gorm:row").Register("otel:start", start),
		cb.Row().After("gorm:row").Register("otel:end", endSpan),
		cb.Raw().Before("gorm:raw").Register("otel:start", start),
		cb.Raw().After("gorm:raw").Register("otel:end", endSpan),
	)
}

const spanKey = "otel:span"

func startSpan(tracer trace.Tracer, database string) func(*gorm.DB) {
	return func(tx *gorm.DB) {
		ctx := tx.Statement.Context
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return // no traced call: a statement costs no span
		}
		ctx, span := tracer.Start(ctx, "mysql "+tx.Statement.Table, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(semconv.DBSystemNameMySQL, semconv.DBNamespace(database)))
		tx.Statement.Context = ctx
		tx.InstanceSet(spanKey, span)
	}
}

func endSpan(tx *gorm.DB) {
	v, ok := tx.InstanceGet(spanKey)
	if !ok {
		return
	}
	span := v.(trace.Span)
	defer span.End()
	q := tx.Statement.SQL.String()
	op, _, _ := strings.Cut(strings.TrimSpace(q), " ")
	op = strings.ToUpper(op)
	span.SetName(strings.TrimSpace(op + " " + tx.Statement.Table))
	span.SetAttributes(semconv.DBQueryText(q), semconv.DBOperationName(op),
		attribute.Int64("db.response.returned_rows", tx.Statement.RowsAffected))
	if tx.Statement.Table != "" {
		span.SetAttributes(semconv.DBCollectionName(tx.Statement.Table))
	}
	if err := tx.Error; err != nil && err != gorm.ErrRecordNotFound {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}
