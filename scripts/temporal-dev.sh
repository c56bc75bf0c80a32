#!/usr/bin/env bash
# Starts the Temporal CLI dev server (pinned in tools/go.mod) in the
# background unless one already answers on the port, registers the
# search attributes seckill needs, and waits until it is ready.
#
#   scripts/temporal-dev.sh [--db FILE]
#
# Env: TEMPORAL_PORT (7233), TEMPORAL_UI_PORT (8233), TEMPORAL_LOG
# (.temporal/server.log). Without --db the server keeps everything in memory.
set -euo pipefail
cd "$(dirname "$0")/.."

port="${TEMPORAL_PORT:-7233}"
ui_port="${TEMPORAL_UI_PORT:-8233}"
log="${TEMPORAL_LOG:-.temporal/server.log}"
db_args=()
if [[ "${1:-}" == "--db" ]]; then db_args=(--db-filename "$2"); fi

mkdir -p .temporal bin
# Build once; `go build` is a no-op when the binary is up to date.
go build -o bin/temporal -modfile=tools/go.mod github.com/temporalio/cli/cmd/temporal

ready() { bin/temporal operator cluster health --address "127.0.0.1:${port}" >/dev/null 2>&1; }

if ready; then
  echo "temporal: already running on :${port}"
else
  echo "temporal: starting dev server on :${port} (Web UI :${ui_port}), log ${log}"
  nohup bin/temporal server start-dev --ip 127.0.0.1 --port "${port}" --ui-port "${ui_port}" \
    --log-level warn "${db_args[@]}" \
    --search-attribute OrderStatus=Keyword --search-attribute SessionID=Int \
    --search-attribute UserID=Int --search-attribute TraceID=Keyword \
    >"${log}" 2>&1 &
  echo $! > .temporal/server.pid
  for _ in $(seq 1 120); do
    ready && break
    sleep 0.5
  done
  ready || { echo "temporal: dev server did not become ready; see ${log}" >&2; tail -20 "${log}" >&2; exit 1; }
fi

# A server started by someone else may lack them; creating is idempotent
# enough: an existing attribute of the same type is an error we ignore.
for sa in OrderStatus=Keyword SessionID=Int UserID=Int TraceID=Keyword; do
  bin/temporal operator search-attribute create --address "127.0.0.1:${port}" \
    --name "${sa%%=*}" --type "${sa##*=}" >/dev/null 2>&1 || true
done
echo "temporal: ready on 127.0.0.1:${port}, Web UI http://127.0.0.1:${ui_port}"
