#!/usr/bin/env bash
# The durable Temporal server: the real server (not the dev server), built
# from the go.temporal.io/server module pinned in tools/go.mod, persisted on
# PostgreSQL with SQL advanced visibility, 8 history shards, the Web UI next
# to it. Its config is deploy/temporal/ (the same files docker-compose.yml
# mounts).
#
#   scripts/temporal-server.sh [start]  build what is missing, create the
#                                        databases and bring their schemas up
#                                        to date, start the server and the Web
#                                        UI unless they run, create the
#                                        `default` namespace and seckill's
#                                        search attributes
#   scripts/temporal-server.sh stop     stop the processes `start` started
#   scripts/temporal-server.sh status   say what runs (exit 1 when not ours)
#   scripts/temporal-server.sh env      print TEMPORAL_ADDRESS=… (and, with TLS,
#                                        TEMPORAL_TLS_*=…) for eval
#
# Env: TEMPORAL_DURABLE_PORT (7933, the frontend; the other ports follow from
# it, see deploy/temporal/temporal.yaml), TEMPORAL_DURABLE_UI_PORT (8933),
# TEMPORAL_SHARDS (8),
# TEMPORAL_PG_ADDR (127.0.0.1:5432), TEMPORAL_PG_USER (postgres),
# TEMPORAL_PG_PASSWORD, TEMPORAL_DB (temporal), TEMPORAL_VISIBILITY_DB
# (temporal_visibility), TEMPORAL_LOG_LEVEL (warn), TEMPORAL_TLS_DIR (unset:
# plaintext; set: the frontend serves mTLS with the certificates in that
# directory, made here with openssl from a CA of their own when missing,
# and every client here presents its client certificate). PIDs and logs
# live in .temporal/durable-<port>/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."

# Own names for the ports: TEMPORAL_PORT is the dev server's (the Makefile
# exports it); the config reads TEMPORAL_PORT, set here from ours.
export TEMPORAL_PORT="${TEMPORAL_DURABLE_PORT:-7933}"
export TEMPORAL_UI_PORT="${TEMPORAL_DURABLE_UI_PORT:-8933}"
export TEMPORAL_PG_ADDR="${TEMPORAL_PG_ADDR:-127.0.0.1:5432}"
export TEMPORAL_PG_USER="${TEMPORAL_PG_USER:-postgres}"
export TEMPORAL_PG_PASSWORD="${TEMPORAL_PG_PASSWORD:-}"
export TEMPORAL_DB="${TEMPORAL_DB:-temporal}"
export TEMPORAL_VISIBILITY_DB="${TEMPORAL_VISIBILITY_DB:-temporal_visibility}"
export TEMPORAL_DYNAMIC_CONFIG="${TEMPORAL_DYNAMIC_CONFIG:-deploy/temporal/dynamicconfig.yaml}"
port="${TEMPORAL_PORT}"
ui_port="${TEMPORAL_UI_PORT}"
if [[ -n "${TEMPORAL_TLS_DIR:-}" ]]; then
  mkdir -p "${TEMPORAL_TLS_DIR}"
  TEMPORAL_TLS_DIR="$(cd "${TEMPORAL_TLS_DIR}" && pwd)"
  # What the server's config, the Web UI, the CLI and seckill read: Temporal's own names.
  export TEMPORAL_TLS_DIR TEMPORAL_TLS=true TEMPORAL_TLS_SERVER_NAME=localhost \
    TEMPORAL_TLS_SERVER_CA_CERT_PATH="${TEMPORAL_TLS_DIR}/ca.pem" \
    TEMPORAL_TLS_CLIENT_CERT_PATH="${TEMPORAL_TLS_DIR}/client.pem" \
    TEMPORAL_TLS_CLIENT_KEY_PATH="${TEMPORAL_TLS_DIR}/client.key"
fi
addr="127.0.0.1:${port}"
dir=".temporal/durable-${port}"
mode="${1:-start}"

# ours NAME BINARY prints the pid in $dir/NAME.pid if that process still
# runs BINARY (a stale pid file, or a pid reused by another program, is not
# ours).
ours() {
  local pidfile="${dir}/$1.pid" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile")"
  [[ -n "$pid" ]] && ps -p "$pid" -o args= 2>/dev/null | grep -q "$2" || return 1
  echo "$pid"
}

kill_ours() {
  local pid
  if pid="$(ours "$1" "$2")"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    echo "temporal-server: stopped $1 (pid ${pid})"
  fi
  rm -f "${dir}/$1.pid"
}

stop() {
  kill_ours ui bin/temporal-ui-server
  kill_ours server bin/temporal-server
}

ready() { bin/temporal operator cluster health --address "$addr" >/dev/null 2>&1; }

# build makes the binaries that are missing; `make temporal-durable` rebuilds
# them when tools/go.mod changes.
build() {
  mkdir -p bin
  local b
  for b in "temporal:github.com/temporalio/cli/cmd/temporal" \
    "temporal-server:go.temporal.io/server/cmd/server" \
    "temporal-sql-tool:go.temporal.io/server/cmd/tools/sql" \
    "temporal-ui-server:github.com/temporalio/ui-server/v2/cmd/server"; do
    if [[ ! -x "bin/${b%%:*}" ]]; then
      echo "temporal-server: building bin/${b%%:*} (the server takes minutes the first time)"
      go build -o "bin/${b%%:*}" -modfile=tools/go.mod "${b#*:}"
    fi
  done
  [[ -x bin/seckill ]] || make --no-print-directory -s build
}

# certs makes TEMPORAL_TLS_DIR's files unless they exist: a CA of their own
# (ca.pem; its key stays beside it), the frontend's certificate and a
# client's, both for localhost and 127.0.0.1.
certs() {
  local d="${TEMPORAL_TLS_DIR}" who
  [[ -f "$d/client.key" ]] && return 0
  command -v openssl >/dev/null || { echo "temporal-server: TEMPORAL_TLS_DIR needs openssl (apt-get install openssl)" >&2; exit 1; }
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 \
    -subj "/CN=seckill local Temporal CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
  for who in server client; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=temporal-${who}" \
      -keyout "$d/${who}.key" -out "$d/${who}.csr" 2>/dev/null
    openssl x509 -req -in "$d/${who}.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 825 \
      -extfile <(printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n') \
      -out "$d/${who}.pem" 2>/dev/null
    rm -f "$d/${who}.csr"
  done
  chmod 600 "$d"/*.key
  echo "temporal-server: made a CA and mTLS certificates in $d"
}

start() {
  mkdir -p "$dir"
  build
  if [[ -n "${TEMPORAL_TLS_DIR:-}" ]]; then certs; fi
  local pid sas
  if pid="$(ours server bin/temporal-server)" && ready; then
    echo "temporal-server: already running on ${addr} (pid ${pid})"
  elif ready; then
    echo "temporal-server: something else answers on ${addr}; not starting another" >&2
    exit 1
  else
    local t0=$SECONDS
    # deploy/temporal/setup.sh: the same steps as docker-compose's one-shot
    # temporal-schema service, with the schema files of the pinned module.
    if ! TEMPORAL_SQL_TOOL=bin/temporal-sql-tool \
      TEMPORAL_SCHEMA_DIR="$(go list -modfile=tools/go.mod -m -f '{{.Dir}}' go.temporal.io/server)/schema/postgresql/v12" \
      deploy/temporal/setup.sh schema >"${dir}/schema.log" 2>&1; then
      echo "temporal-server: schema setup failed; last lines of ${dir}/schema.log:" >&2
      tail -20 "${dir}/schema.log" >&2
      exit 1
    fi
    echo "temporal-server: databases ${TEMPORAL_DB} and ${TEMPORAL_VISIBILITY_DB} on ${TEMPORAL_PG_ADDR} up to date ($((SECONDS - t0))s)"
    t0=$SECONDS
    nohup bin/temporal-server --root . --config deploy/temporal --env temporal --allow-no-auth start >"${dir}/server.log" 2>&1 &
    echo $! >"${dir}/server.pid"
    for _ in $(seq 1 240); do
      ready && break
      kill -0 "$(cat "${dir}/server.pid")" 2>/dev/null || break
      sleep 0.5
    done
    if ! ready; then
      echo "temporal-server: the server did not become ready; last lines of ${dir}/server.log:" >&2
      tail -20 "${dir}/server.log" >&2
      stop >/dev/null
      exit 1
    fi
    echo "temporal-server: frontend answers on ${addr} ($((SECONDS - t0))s)"
  fi

  mapfile -t sas < <(bin/seckill search-attributes)
  [[ ${#sas[@]} -gt 0 ]] || { echo "temporal-server: seckill search-attributes printed nothing" >&2; exit 1; }
  TEMPORAL_CLI=bin/temporal TEMPORAL_ADDRESS="$addr" deploy/temporal/setup.sh namespace "${sas[@]}" | sed 's/^setup:/temporal-server:/'

  if ! pid="$(ours ui bin/temporal-ui-server)"; then
    TEMPORAL_UI_ADDRESS="$addr" TEMPORAL_UI_IP=127.0.0.1 nohup bin/temporal-ui-server --root . --config deploy/temporal --env ui start \
      >"${dir}/ui.log" 2>&1 &
    echo $! >"${dir}/ui.pid"
  fi
  status
  echo "temporal-server: stop it with scripts/temporal-server.sh stop (TEMPORAL_DURABLE_PORT=${port})"
}

status() {
  local pid rc=0
  if pid="$(ours server bin/temporal-server)"; then
    echo "temporal-server: server pid ${pid}, frontend ${addr} (gRPC), HTTP 127.0.0.1:$((port + 10)), metrics http://127.0.0.1:$((port + 1067))/metrics, log ${dir}/server.log"
  else
    echo "temporal-server: no server of ours on ${addr}"
    rc=1
  fi
  if pid="$(ours ui bin/temporal-ui-server)"; then
    echo "temporal-server: Web UI pid ${pid}, http://127.0.0.1:${ui_port}"
  fi
  return $rc
}

case "$mode" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env)
    echo "TEMPORAL_ADDRESS=${addr}"
    if [[ -n "${TEMPORAL_TLS_DIR:-}" ]]; then
      echo "TEMPORAL_TLS=true TEMPORAL_TLS_SERVER_NAME=localhost TEMPORAL_TLS_SERVER_CA_CERT_PATH=${TEMPORAL_TLS_SERVER_CA_CERT_PATH}"
      echo "TEMPORAL_TLS_CLIENT_CERT_PATH=${TEMPORAL_TLS_CLIENT_CERT_PATH} TEMPORAL_TLS_CLIENT_KEY_PATH=${TEMPORAL_TLS_CLIENT_KEY_PATH}"
    fi
    ;;
  *) echo "usage: scripts/temporal-server.sh [start|stop|status|env]" >&2; exit 2 ;;
esac
