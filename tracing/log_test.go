package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/seckill/seckill/tracing"
)

// A line logged with a span's context carries its trace_id and span_id
// (once, whether or not the line named its trace id); without one,
// neither.
func TestLogLinesCarryTheSpan(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil)))
	sc := tracing.NewSpanContext()
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	line := func() map[string]any {
		var m map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
		buf.Reset()
		return m
	}

	log.InfoContext(ctx, "step")
	m := line()
	require.Equal(t, sc.TraceID().String(), m["trace_id"])
	require.Equal(t, sc.SpanID().String(), m["span_id"])

	log.With("order_no", "1-x").InfoContext(ctx, "named", "trace_id", sc.TraceID().String())
	require.Equal(t, 1, bytes.Count(buf.Bytes(), []byte(`"trace_id"`)), buf.String())
	m = line()
	require.Equal(t, sc.SpanID().String(), m["span_id"])

	log.Info("no context")
	m = line()
	require.NotContains(t, m, "trace_id")
	require.NotContains(t, m, "span_id")
}
