package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/seckill/seckill/internal/app"
)

// startTracing sets up the command's traces (off without an OTLP
// endpoint) under its service name; stop flushes them.
func startTracing(ctx context.Context, service string) (stop func(), err error) {
	return app.StartTracing(ctx, service, slog.New(slog.NewJSONHandler(os.Stderr, nil)))
}
