package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/seckill/seckill/internal/app"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/temporal"
)

// serveWorkerHTTP serves the worker's ops endpoints on addr until ctx ends:
// /metrics (seckill_* sale series, relay actions, the Temporal SDK's
// temporal_* metrics), /healthz (the process runs) and /readyz (MySQL,
// Redis and Temporal answer). The worker has no public API; keep addr off
// the public network.
func serveWorkerHTTP(ctx context.Context, addr string, m *app.Main) error {
	if addr == "" {
		return nil
	}
	// Listen before returning: a worker whose port is taken must say so at
	// start, not run on unwatched.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("worker ops HTTP (SECKILL_WORKER_HTTP_ADDR): %w", err)
	}
	deps := map[string]func(context.Context) error{"mysql": m.DB.Ping, "redis": m.Gate.Ping, "temporal": temporal.NewOrders(m.Temporal, "").Ping}
	go m.Metrics.WatchDependencies(ctx, 0, deps)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Metrics.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, buildinfo.Healthy())
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for name, ping := range deps {
			if err := ping(ctx); err != nil {
				m.Log.Warn("readyz: dependency down", "dependency", name, "error", err)
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"code": "UNAVAILABLE", "message": name + " is not reachable"})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		m.Log.Info("worker ops HTTP listening", "addr", addr)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Log.Error("worker ops HTTP stopped", "addr", addr, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
