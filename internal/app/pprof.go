package app

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof exposes Go's profiler on addr (SECKILL_PPROF_ADDR, e.g.
// 127.0.0.1:6060) when set: how the bench's bottlenecks were found. Keep it
// on a loopback address; it is not for the public port.
func ServePprof(addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		log.Info("pprof listening", "addr", addr)
		if err := srv.ListenAndServe(); err != nil {
			log.Warn("pprof stopped", "error", err)
		}
	}()
}
