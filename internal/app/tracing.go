package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill/seckill/redis"
	"github.com/seckill/seckill/tracing"
)

// StartTracing sets the process's traces up from the OpenTelemetry
// variables (tracing.Start; service is the name when OTEL_SERVICE_NAME is
// unset) and returns what flushes them on the way out.
func StartTracing(ctx context.Context, service string, log *slog.Logger) (stop func(), err error) {
	shutdown, err := tracing.Start(ctx, service)
	if err != nil {
		return nil, err
	}
	if tracing.Enabled() {
		log.Info("tracing on", "service", service)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: spans not flushed", "error", err)
		}
	}, nil
}

// trace makes the stores' calls spans when tracing is on: MySQL's
// statements and Redis's commands (Temporal's calls are traced by its
// interceptor, temporal.Dial; HTTP out by tracing.Transport).
func (m *Main) trace() error {
	if !tracing.Enabled() {
		return nil
	}
	if err := m.DB.Trace(); err != nil {
		return err
	}
	return redis.Trace(m.Redis)
}
