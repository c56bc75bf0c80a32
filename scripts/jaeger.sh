#!/usr/bin/env bash
# Jaeger (bin/jaeger, pinned in tools/jaeger/go.mod: `make jaeger`) for
# local runs: run with no configuration, it is the all-in-one of Jaeger v2
# with its memory store (traces are gone when it stops); OTLP on :4317
# (gRPC) and :4318 (HTTP), its UI and query API on :16686. Bound to
# loopback.
#
#   scripts/jaeger.sh start    start it unless one answers (says which)
#   scripts/jaeger.sh stop     stop the one `start` started (by PID)
#   scripts/jaeger.sh env      the OTEL_* variables that point a process at it
#
# Env: JAEGER_LOG (.jaeger/jaeger.log), JAEGER_PID (.jaeger/jaeger.pid),
# JAEGER_UI_ASSETS (a build of Jaeger's UI, which the Go module does not
# carry: without it :16686 serves the query API and a placeholder page;
# docs/OPERATIONS.md says how to build it).
set -euo pipefail
cd "$(dirname "$0")/.."

log="${JAEGER_LOG:-.jaeger/jaeger.log}"
pidfile="${JAEGER_PID:-.jaeger/jaeger.pid}"
ui="http://127.0.0.1:16686"

answers() { curl -fsS --max-time 2 "$ui/api/services" >/dev/null 2>&1; }

start() {
  if answers; then
    echo "jaeger: reused the one answering at $ui"
    return 0
  fi
  [ -x bin/jaeger ] || { echo "jaeger: bin/jaeger is missing (make jaeger)" >&2; exit 1; }
  mkdir -p "$(dirname "$log")" "$(dirname "$pidfile")"
  local assets=()
  [ -z "${JAEGER_UI_ASSETS:-}" ] || assets=("--set=extensions.jaeger_query.ui.assets_path=$JAEGER_UI_ASSETS")
  # No configuration: the all-in-one's own, whose ports (its receivers',
  # its health check's, its metrics') listen on JAEGER_LISTEN_HOST; the
  # UI's and query API's would listen on every interface: --set keeps
  # them on loopback too.
  JAEGER_LISTEN_HOST=127.0.0.1 nohup bin/jaeger \
    --set=extensions.jaeger_query.http.endpoint=127.0.0.1:16686 \
    --set=extensions.jaeger_query.grpc.endpoint=127.0.0.1:16685 "${assets[@]}" \
    >"$log" 2>&1 &
  echo $! >"$pidfile"
  for _ in $(seq 1 150); do
    answers && { echo "jaeger: started; UI $ui (log $log)"; return 0; }
    kill -0 "$(cat "$pidfile")" 2>/dev/null || break
    sleep 0.2
  done
  echo "jaeger: not answering at $ui; last lines of $log:" >&2
  tail -20 "$log" >&2
  exit 1
}

stop() {
  [ -f "$pidfile" ] || return 0
  local pid
  pid="$(cat "$pidfile")"
  if ps -p "$pid" -o args= 2>/dev/null | grep -q 'bin/jaeger'; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "jaeger: stopped (pid $pid)"
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env)
  echo "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"
  echo "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"
  ;;
*)
  echo "usage: $0 start|stop|env" >&2
  exit 2
  ;;
esac
