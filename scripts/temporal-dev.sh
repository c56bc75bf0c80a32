#!/usr/bin/env bash
# The Temporal CLI dev server (pinned in tools/go.mod) for local runs and
# tests, with the search attributes seckill needs (printed by
# `seckill search-attributes`, the one list in worker.SearchAttributeKeys).
#
#   scripts/temporal-dev.sh [--db FILE] [start]   start one unless one answers
#   scripts/temporal-dev.sh stop                  stop the one `start` started
#   scripts/temporal-dev.sh [--db FILE] run CMD…  start (or reuse), run CMD, stop
#                                                 the server if it was started
#                                                 here; exits with CMD's status
#
# `start` says which it did on its last line of stdout: "temporal: started …"
# or "temporal: reused …". It writes the pid file only when it started the
# server, so `stop` never stops a server someone else started.
#
# Env: TEMPORAL_PORT (7233), TEMPORAL_UI_PORT (8233), TEMPORAL_LOG
# (.temporal/server-<port>.log), TEMPORAL_PID (.temporal/server-<port>.pid),
# TEMPORAL_METRICS_PORT (unset: a random port nobody is told; set it to read
# the server's Prometheus /metrics, as scripts/capacity.sh does).
# Without --db the server keeps everything in memory.
set -euo pipefail
cd "$(dirname "$0")/.."

port="${TEMPORAL_PORT:-7233}"
ui_port="${TEMPORAL_UI_PORT:-8233}"
log="${TEMPORAL_LOG:-.temporal/server-${port}.log}"
pidfile="${TEMPORAL_PID:-.temporal/server-${port}.pid}"
db_args=()
metrics_args=()
if [[ -n "${TEMPORAL_METRICS_PORT:-}" ]]; then metrics_args=(--metrics-port "${TEMPORAL_METRICS_PORT}"); fi
if [[ "${1:-}" == "--db" ]]; then db_args=(--db-filename "$2"); shift 2; fi
mode="${1:-start}"
if [[ $# -gt 0 ]]; then shift; fi

# ours prints the pid of the dev server this script started on the port,
# if it still runs (a stale pid file, or a pid reused by another program,
# is not ours).
ours() {
  [[ -f "$pidfile" ]] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [[ -n "$pid" ]] && ps -p "$pid" -o args= 2>/dev/null | grep -q 'temporal server start-dev' || return 1
  echo "$pid"
}

stop() {
  local pid
  if pid="$(ours)"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "temporal: stopped the dev server on :${port} (pid ${pid})"
  fi
  rm -f "$pidfile"
}

# how is what start did: "started" or "reused".
how=""
start() {
  mkdir -p .temporal bin
  # Build once; `go build` is a no-op when the binaries are up to date.
  go build -o bin/temporal -modfile=tools/go.mod github.com/temporalio/cli/cmd/temporal
  make --no-print-directory -s build # stamped with its version (seckill version)
  local sas pid
  mapfile -t sas < <(bin/seckill search-attributes)
  [[ ${#sas[@]} -gt 0 ]] || { echo "temporal: seckill search-attributes printed nothing" >&2; exit 1; }

  ready() { bin/temporal operator cluster health --address "127.0.0.1:${port}" >/dev/null 2>&1; }

  if ready; then
    how=reused
  else
    echo "temporal: starting dev server on :${port} (Web UI :${ui_port}), log ${log}"
    local flags=()
    for sa in "${sas[@]}"; do flags+=(--search-attribute "$sa"); done
    nohup bin/temporal server start-dev --ip 127.0.0.1 --port "${port}" --ui-port "${ui_port}" \
      --log-level warn "${db_args[@]}" "${metrics_args[@]}" "${flags[@]}" >"${log}" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 120); do
      ready && break
      sleep 0.5
    done
    if ! ready; then
      echo "temporal: dev server did not become ready; last lines of ${log}:" >&2
      tail -20 "${log}" >&2
      stop >/dev/null
      exit 1
    fi
    how=started
  fi

  # A server started by someone else may lack them; creating is idempotent
  # enough: an existing attribute of the same type is an error we ignore.
  for sa in "${sas[@]}"; do
    bin/temporal operator search-attribute create --address "127.0.0.1:${port}" \
      --name "${sa%%=*}" --type "${sa##*=}" >/dev/null 2>&1 || true
  done
  if [[ $how == started ]]; then
    echo "temporal: started on 127.0.0.1:${port} (pid $(cat "$pidfile"), Web UI http://127.0.0.1:${ui_port}); stop it with scripts/temporal-dev.sh stop"
  elif pid="$(ours)"; then
    echo "temporal: reused the server on 127.0.0.1:${port} that an earlier start started (pid ${pid}); stop it with scripts/temporal-dev.sh stop"
  else
    echo "temporal: reused the server already running on 127.0.0.1:${port} (someone else's: left running)"
  fi
}

case "$mode" in
  start) start ;;
  stop) stop ;;
  run)
    [[ $# -gt 0 ]] || { echo "usage: scripts/temporal-dev.sh [--db FILE] run CMD…" >&2; exit 2; }
    start
    if [[ $how == started ]]; then trap stop EXIT; trap 'exit 130' INT TERM; fi
    set +e
    "$@"
    rc=$?
    exit "$rc"
    ;;
  *) echo "usage: scripts/temporal-dev.sh [--db FILE] [start|stop|run CMD…]" >&2; exit 2 ;;
esac
