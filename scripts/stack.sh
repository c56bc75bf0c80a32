#!/usr/bin/env bash
# The production topology on this machine (`make stack`, `make stack-stop`):
# a Redis Cluster of 3 masters and 3 replicas (scripts/redis-cluster.sh),
# the durable Temporal server on PostgreSQL with its Web UI
# (scripts/temporal-server.sh), the machine's MariaDB (a database of the
# stack's own), two workers, two APIs, and HAProxy in front of the APIs
# (deploy/haproxy/haproxy.cfg), health-checked on /readyz. Loopback only.
#
#   scripts/stack.sh start    start it all, print the URLs and the secrets
#   scripts/stack.sh stop     stop exactly what start started (by PID)
#   scripts/stack.sh status   what runs
#
# Env: STACK_PORT (the balancer's port, 8080; the APIs take +1 and +2, the
# workers' ops endpoints +11 and +12, HAProxy's stats page +324),
# SECKILL_MYSQL_DSN (the server; the database is seckill_stack).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.stack
port="${STACK_PORT:-8080}"
lb="127.0.0.1:${port}"
stats="127.0.0.1:$((port + 324))"
apis=("127.0.0.1:$((port + 1))" "127.0.0.1:$((port + 2))")
workers=("127.0.0.1:$((port + 11))" "127.0.0.1:$((port + 12))")

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
  local f
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    if alive "$f"; then
      kill "$(cat "$f")" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$f" || break; sleep 0.2; done
      if alive "$f"; then kill -9 "$(cat "$f")" 2>/dev/null || true; fi
      echo "stack: stopped $(basename "$f" .pid)"
    fi
    rm -f "$f"
  done
  if [ -f "$dir/started-redis" ]; then scripts/redis-cluster.sh stop; rm -f "$dir/started-redis"; fi
  if [ -f "$dir/started-temporal" ]; then scripts/temporal-server.sh stop; rm -f "$dir/started-temporal"; fi
}

status() {
  local f any=0
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    any=1
    if alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"; else echo "$(basename "$f" .pid): dead"; fi
  done
  [ "$any" = 1 ] || echo "stack: not running"
}

# spawn NAME CMD... runs CMD in the background with its log in $dir.
spawn() {
  local name=$1
  shift
  nohup "$@" >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
}

wait_ready() {
  local name=$1 url=$2
  for _ in $(seq 1 300); do
    alive "$dir/$name.pid" || { echo "stack: $name exited; last lines of $dir/$name.log:" >&2; tail -20 "$dir/$name.log" >&2; exit 1; }
    curl -fsS "$url" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "stack: $name not ready at $url within 60 s" >&2
  exit 1
}

start() {
  if [ -f "$dir/api-1.pid" ] && alive "$dir/api-1.pid"; then
    echo "stack: already running (scripts/stack.sh status)"
    return 0
  fi
  command -v haproxy >/dev/null || { echo "stack: haproxy is not installed (apt-get install haproxy)" >&2; exit 1; }
  mkdir -p "$dir"
  trap 'echo "stack: start failed; stopping what started" >&2; stop' ERR

  go build -o bin/seckill ./cmd/seckill

  # Redis Cluster and Temporal: ours unless they already run.
  if ! scripts/redis-cluster.sh status >/dev/null 2>&1; then
    scripts/redis-cluster.sh start
    touch "$dir/started-redis"
  fi
  if ! scripts/temporal-server.sh status >/dev/null 2>&1; then
    scripts/temporal-server.sh start
    touch "$dir/started-temporal"
  fi
  eval "$(scripts/redis-cluster.sh env)"
  eval "$(scripts/temporal-server.sh env)"
  export SECKILL_REDIS_ADDR SECKILL_TEMPORAL_ADDR

  # Secrets of this stack's own, kept for the operator's curl commands.
  if [ ! -f "$dir/secrets.env" ]; then
    secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
    {
      echo "SECKILL_JWT_SECRET=$(secret)"
      echo "SECKILL_WEBHOOK_SECRET=$(secret)"
      echo "SECKILL_ADMIN_TOKEN=$(secret)"
    } >"$dir/secrets.env"
  fi
  set -a
  # shellcheck disable=SC1091
  . "$dir/secrets.env"
  set +a
  dsn="${SECKILL_MYSQL_DSN:-root:@tcp(127.0.0.1:3306)/seckill?parseTime=true}"
  server="${dsn%%\?*}"
  export SECKILL_MYSQL_DSN="${server%/*}/seckill_stack?parseTime=true"
  export SECKILL_PAYMENT_PROVIDER="${SECKILL_PAYMENT_PROVIDER:-sandbox}"
  # Shoppers reach the APIs through HAProxy, which names them in
  # X-Forwarded-For; only HAProxy (loopback) is believed.
  export SECKILL_PROXY_HEADER=X-Forwarded-For SECKILL_TRUSTED_PROXIES=127.0.0.1/32
  bin/seckill migrate >"$dir/migrate.log" 2>&1

  for i in 0 1; do
    SECKILL_WORKER_HTTP_ADDR="${workers[$i]}" spawn "worker-$((i + 1))" bin/seckill worker
  done
  for i in 0 1; do
    SECKILL_HTTP_ADDR="${apis[$i]}" spawn "api-$((i + 1))" bin/seckill api
  done
  for i in 0 1; do
    wait_ready "worker-$((i + 1))" "http://${workers[$i]}/readyz"
    wait_ready "api-$((i + 1))" "http://${apis[$i]}/readyz"
  done
  SECKILL_LB_ADDR="$lb" SECKILL_LB_STATS="$stats" SECKILL_API_1="${apis[0]}" SECKILL_API_2="${apis[1]}" \
    spawn haproxy haproxy -db -f deploy/haproxy/haproxy.cfg
  wait_ready haproxy "http://$lb/readyz"
  trap - ERR

  cat <<EOF
stack: running (stop it with make stack-stop)
  shop and API (HAProxy)   http://$lb
  HAProxy stats            http://$stats
  APIs                     http://${apis[0]}  http://${apis[1]}
  workers' metrics         http://${workers[0]}/metrics  http://${workers[1]}/metrics
  Redis Cluster            $SECKILL_REDIS_ADDR
  Temporal                 $SECKILL_TEMPORAL_ADDR
  MySQL database           seckill_stack
  secrets                  $dir/secrets.env (SECKILL_ADMIN_TOKEN for the admin API)
  logs                     $dir/*.log
EOF
  scripts/temporal-server.sh status 2>/dev/null | sed 's/^/  /' || true
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*)
  echo "usage: $0 start|stop|status" >&2
  exit 2
  ;;
esac
