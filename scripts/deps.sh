#!/usr/bin/env bash
# What `make test`, `make dev` and `make stack` need beyond Go, brought here
# so that a new machine needs only those commands:
#
#   scripts/deps.sh dev     MariaDB and Redis answer (each is started when
#                           it is installed but down)
#   scripts/deps.sh test    those and PostgreSQL (the durable Temporal
#                           servers), chromium (the shop page's browser
#                           tests) and haproxy (the fleet test)
#   scripts/deps.sh stack   those and PostgreSQL, haproxy (the balancer and
#                           the Temporal UI's door) and openssl (its
#                           password's hash)
#
# Go tools (Temporal, stripe-mock, promtool) are pinned modules built by the
# Makefile; what has no Go module comes from Debian's packages, installed
# with apt-get when we are root or have password-less sudo, and otherwise
# named with the command that installs it. A dependency that is there
# already costs one `command -v`.
set -euo pipefail

# as_root CMD... runs CMD as root, or fails naming it.
as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo "$@"
  else
    echo "deps: needs root for: $*" >&2
    return 1
  fi
}

# package CMD PKG installs Debian's PKG unless CMD is on the PATH (or is an
# absolute path that exists). The package lists are refreshed only when
# the install fails without them (a machine's lists may be absent).
package() {
  local cmd=$1 pkg=$2
  if [ -x "$cmd" ] || command -v "$cmd" >/dev/null 2>&1; then
    return 0
  fi
  echo "deps: installing $pkg (for $cmd)"
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg")
  as_root "${apt[@]}" || { as_root apt-get update && as_root "${apt[@]}"; } || {
    echo "deps: $cmd is missing; install it with: apt-get install -y --no-install-recommends $pkg" >&2
    exit 1
  }
}

# wait_for NAME CHECK... polls CHECK for up to 60 s.
wait_for() {
  local name=$1
  shift
  for _ in $(seq 1 120); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "deps: $name did not answer within 60 s" >&2
  exit 1
}

mariadb_up() { mariadb-admin -uroot -h127.0.0.1 ping; }
redis_up() { redis-cli -h 127.0.0.1 ping; }
postgres_up() { pg_isready -h 127.0.0.1; }

# start_mariadb, start_redis and start_postgres start the machine's
# servers when they are installed but down, the way the machine starts
# them (no systemd here).
start_mariadb() {
  package mariadb-admin mariadb-server
  if ! mariadb_up >/dev/null 2>&1; then
    echo "deps: starting MariaDB"
    as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for MariaDB mariadb_up
  fi
}

start_redis() {
  package redis-server redis-server
  if ! redis_up >/dev/null 2>&1; then
    echo "deps: starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --logfile "${TMPDIR:-/tmp}/seckill-redis.log"
    wait_for Redis redis_up
  fi
}

start_postgres() {
  package pg_isready postgresql
  if ! postgres_up >/dev/null 2>&1; then
    echo "deps: starting PostgreSQL"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    wait_for PostgreSQL postgres_up
  fi
}

case "${1:-}" in
dev) start_mariadb && start_redis ;;
test)
  start_mariadb && start_redis && start_postgres
  package /usr/bin/chromium chromium
  package haproxy haproxy
  ;;
stack)
  start_mariadb && start_redis && start_postgres
  package haproxy haproxy
  package openssl openssl
  ;;
*)
  echo "usage: $0 dev|test|stack" >&2
  exit 2
  ;;
esac
