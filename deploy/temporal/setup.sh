#!/bin/sh
# Sets up what the durable Temporal server (temporal.yaml) needs, the same
# way for scripts/temporal-server.sh and for docker-compose.yml (the
# temporalio/admin-tools image, whose shell is POSIX sh):
#
#   setup.sh schema            before the server starts: create the two
#                              databases unless they exist, and bring their
#                              schemas to the newest version of the server's
#                              schema files (a no-op when up to date)
#   setup.sh namespace SPEC…   once the server answers (it waits up to 2 min
#                              for that): create the `default`
#                              namespace unless it exists (the real server,
#                              unlike the dev server, starts with none) and
#                              register the search attributes, each as
#                              Name=Type (`seckill search-attributes`)
#
# Env: the TEMPORAL_PG_* and TEMPORAL_*DB variables of temporal.yaml, with its
# defaults; TEMPORAL_SQL_TOOL (temporal-sql-tool), TEMPORAL_SCHEMA_DIR (the
# server module's schema/postgresql/v12; /etc/temporal/schema/postgresql/v12
# in the admin-tools image), TEMPORAL_CLI (temporal) and TEMPORAL_ADDRESS
# (the frontend, read by the CLI itself).
set -eu

pg_addr="${TEMPORAL_PG_ADDR:-127.0.0.1:5432}"
sql_tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
cli="${TEMPORAL_CLI:-temporal}"
# The tool reads the password from SQL_PASSWORD: never on a command line.
SQL_PASSWORD="${TEMPORAL_PG_PASSWORD:-}"
export SQL_PASSWORD

# schema DB KIND brings one database (KIND temporal or visibility) up to date.
schema() {
  db="$1" kind="$2"
  set -- --plugin postgres12_pgx --ep "${pg_addr%:*}" -p "${pg_addr##*:}" -u "${TEMPORAL_PG_USER:-postgres}" --db "$db"
  "$sql_tool" "$@" create-database
  "$sql_tool" "$@" setup-schema -v 0.0
  "$sql_tool" "$@" update-schema -d "${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}/${kind}/versioned"
  echo "setup: database ${db} (${kind}) is up to date"
}

# again_or_give_up N WHAT counts one more failed try in $tries: after the
# N-th it gives up, saying WHAT went wrong; before, it waits a second for
# the next try.
again_or_give_up() {
  tries=$((tries + 1))
  if [ "$tries" -ge "$1" ]; then
    echo "setup: $2" >&2
    exit 1
  fi
  sleep 1
}

namespace() {
  # docker-compose starts this right after the server: wait for its frontend.
  tries=0
  until "$cli" operator cluster health >/dev/null 2>&1; do
    again_or_give_up 120 "the Temporal frontend at ${TEMPORAL_ADDRESS:-127.0.0.1:7233} does not answer"
  done
  if ! "$cli" operator namespace describe --namespace default >/dev/null 2>&1; then
    "$cli" operator namespace create --namespace default --retention 72h
  fi
  # A new namespace reaches the frontend's cache within seconds: retry until
  # every attribute is listed. Creating one that exists with the same type
  # fails, and is fine; the worker checks them all at its start anyway.
  tries=0
  while :; do
    missing=""
    for spec in "$@"; do
      "$cli" operator search-attribute create --namespace default \
        --name "${spec%%=*}" --type "${spec##*=}" >/dev/null 2>&1 || true
    done
    listed="$("$cli" operator search-attribute list --namespace default 2>/dev/null || true)"
    for spec in "$@"; do
      echo "$listed" | grep -qE "^ *${spec%%=*} +${spec##*=} *$" || missing="${missing} ${spec}"
    done
    [ -z "$missing" ] && break
    again_or_give_up 30 "search attributes not registered:${missing}"
  done
  echo "setup: namespace default has the search attributes $*"
}

case "${1:-}" in
  schema)
    schema "${TEMPORAL_DB:-temporal}" temporal
    schema "${TEMPORAL_VISIBILITY_DB:-temporal_visibility}" visibility
    ;;
  namespace)
    shift
    [ $# -gt 0 ] || { echo "usage: setup.sh namespace Name=Type…" >&2; exit 2; }
    namespace "$@"
    ;;
  *) echo "usage: setup.sh schema | namespace Name=Type…" >&2; exit 2 ;;
esac
