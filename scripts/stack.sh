#!/usr/bin/env bash
# The production topology on this machine (`make stack`, `make stack-stop`):
# a Redis Cluster of 3 masters and 3 replicas (scripts/redis-cluster.sh),
# the durable Temporal server on PostgreSQL with its Web UI
# (scripts/temporal-server.sh), the machine's MariaDB (a database of the
# stack's own), two workers, two APIs, and HAProxy in front of the APIs
# (deploy/haproxy/haproxy.cfg), health-checked on /readyz; a second HAProxy
# (deploy/haproxy/ui.cfg) is the Temporal Web UI's door, with HTTP basic
# authentication (the UI itself listens on 127.0.0.1 only); Prometheus
# (bin/prometheus, pinned in tools/promtool/go.mod) scrapes the APIs, the
# workers and the Temporal server with the tested alerting rules loaded
# (deploy/prometheus/stack.yml), its data in .stack/prometheus; Jaeger
# (scripts/jaeger.sh: bin/jaeger's memory store, UI :16686), which every
# process sends its traces to. The stack runs no Grafana: import
# deploy/grafana/dashboards/seckill.json into yours. Loopback only, unless
# STACK_UI_HOST says otherwise for the UI's door.
#
#   scripts/stack.sh start    start it all, print the URLs and the secrets
#   scripts/stack.sh stop     stop exactly what start started (by PID)
#   scripts/stack.sh status   what runs
#
# Env: STACK_PORT (the balancer's port, 8080; the APIs take +1 and +2, the
# workers' ops endpoints +11 and +12, HAProxy's stats page +324, the
# Temporal UI's door +325, Prometheus +1010), STACK_UI_HOST (the address of that door,
# 127.0.0.1; 0.0.0.0 to reach it from elsewhere), SECKILL_UI_USER (its
# login, ops), SECKILL_UI_PASSWORD (its password; without it a random one,
# printed once), SECKILL_UI_TLS_CERT (a PEM: the door speaks HTTPS),
# TEMPORAL_DURABLE_UI_PORT (the UI's own port, 8933), TEMPORAL_TLS_DIR
# (.stack/temporal-tls: the Temporal frontend serves mTLS with certificates
# made there; set it empty for plaintext), SECKILL_MYSQL_DSN (the server;
# the database is seckill_stack).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=.stack
port="${STACK_PORT:-8080}"
lb="127.0.0.1:${port}"
stats="127.0.0.1:$((port + 324))"
apis=("127.0.0.1:$((port + 1))" "127.0.0.1:$((port + 2))")
workers=("127.0.0.1:$((port + 11))" "127.0.0.1:$((port + 12))")
ui="${STACK_UI_HOST:-127.0.0.1}:$((port + 325))"
temporal_ui="127.0.0.1:${TEMPORAL_DURABLE_UI_PORT:-8933}"
prom="127.0.0.1:$((port + 1010))"
# The durable server's metrics port (deploy/temporal/temporal.yaml).
temporal_metrics="127.0.0.1:${TEMPORAL_METRICS_PORT:-$((${TEMPORAL_DURABLE_PORT:-7933} + 1067))}"
export TEMPORAL_TLS_DIR="${TEMPORAL_TLS_DIR-$dir/temporal-tls}"

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

# ui_answers URL [CURL ARGS...] prints the HTTP status URL answers with.
ui_answers() {
  local url=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$url" 2>/dev/null || true
}

secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

start() {
  if [ -f "$dir/api-1.pid" ] && alive "$dir/api-1.pid"; then
    echo "stack: already running (scripts/stack.sh status)"
    return 0
  fi
  command -v haproxy >/dev/null || { echo "stack: haproxy is not installed (apt-get install haproxy)" >&2; exit 1; }
  command -v openssl >/dev/null || { echo "stack: openssl is not installed (apt-get install openssl)" >&2; exit 1; }
  mkdir -p "$dir"
  trap 'echo "stack: start failed; stopping what started" >&2; stop' ERR

  make --no-print-directory -s build prometheus

  # Redis Cluster and Temporal: ours unless they already run.
  if ! scripts/redis-cluster.sh status >/dev/null 2>&1; then
    scripts/redis-cluster.sh start
    touch "$dir/started-redis"
  fi
  if ! scripts/temporal-server.sh status >/dev/null 2>&1; then
    scripts/temporal-server.sh start
    touch "$dir/started-temporal"
  fi
  # Jaeger: ours unless one answers (a pid file only when ours, which
  # stop stops with the rest).
  JAEGER_PID="$dir/jaeger.pid" JAEGER_LOG="$dir/jaeger.log" scripts/jaeger.sh start
  # Exported for every process below: SECKILL_REDIS_ADDR, Temporal's own
  # TEMPORAL_ADDRESS and TEMPORAL_TLS_* (the client certificate), and the
  # OTEL_* variables that send traces to Jaeger (service names seckill-api
  # and seckill-worker).
  set -a
  eval "$(scripts/redis-cluster.sh env)"
  eval "$(scripts/temporal-server.sh env)"
  eval "$(scripts/jaeger.sh env)"
  set +a

  # Secrets of this stack's own, kept for the operator's curl commands.
  if [ ! -f "$dir/secrets.env" ]; then
    (umask 077 && : >"$dir/secrets.env")
    {
      echo "SECKILL_JWT_SECRET=$(secret)"
      echo "SECKILL_WEBHOOK_SECRET=$(secret)"
      echo "SECKILL_ADMIN_TOKEN=$(secret)"
      echo "SECKILL_DRAW_KEY=$(secret)$(secret)"
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
  # ... and the sandbox's checkout pages are linked there, not at one API.
  export SECKILL_PUBLIC_URL="http://$lb"
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

  # The Temporal UI's door: the ops login's password is given or made now,
  # printed once below and never written down; HAProxy gets its SHA-512
  # crypt(3) hash. Not on the shop's balancer: checking a password costs a
  # hash per request, which must not hold shoppers' requests up.
  local ui_user="${SECKILL_UI_USER:-ops}" ui_password="${SECKILL_UI_PASSWORD:-}" shown scheme=http
  shown="(SECKILL_UI_PASSWORD)"
  if [ -z "$ui_password" ]; then
    ui_password="$(secret)"
    shown="$ui_password"
  fi
  [ -z "${SECKILL_UI_TLS_CERT:-}" ] || scheme=https
  # The stack's UI has no OIDC login: the door always asks (env -u).
  SECKILL_UI_USER="$ui_user" SECKILL_UI_PASSWORD_HASH="$(printf '%s' "$ui_password" | openssl passwd -6 -stdin)" \
    SECKILL_TEMPORAL_UI_BIND="$ui" SECKILL_TEMPORAL_UI_UPSTREAM="$temporal_ui" \
    spawn haproxy-ui env -u TEMPORAL_AUTH_ENABLED -u SECKILL_GRAFANA_UPSTREAM haproxy -db -f deploy/haproxy/ui.cfg
  local code=""
  for _ in $(seq 1 100); do
    alive "$dir/haproxy-ui.pid" || { echo "stack: haproxy-ui exited; last lines of $dir/haproxy-ui.log:" >&2; tail -20 "$dir/haproxy-ui.log" >&2; false; }
    code="$(ui_answers "$scheme://$ui/" -k)"
    [ "$code" = 401 ] && break
    sleep 0.2
  done
  [ "$code" = 401 ] || { echo "stack: the Temporal UI's door answers $code without a password, not 401" >&2; false; }

  # Prometheus: the targets of deploy/prometheus/stack.yml, as this
  # stack's ports say; exemplars kept (the APIs' latency buckets carry a
  # request's trace id).
  mkdir -p "$dir/prometheus"
  targets() { printf -- '- targets: [%s]\n' "$(printf '"%s",' "$@" | sed 's/,$//')"; }
  targets "${apis[@]}" >"$dir/prometheus/api.yml"
  targets "${workers[@]}" >"$dir/prometheus/worker.yml"
  targets "$temporal_metrics" >"$dir/prometheus/temporal.yml"
  spawn prometheus bin/prometheus --config.file=deploy/prometheus/stack.yml \
    --storage.tsdb.path="$dir/prometheus/data" --web.listen-address="$prom" --enable-feature=exemplar-storage
  wait_ready prometheus "http://$prom/-/ready"
  trap - ERR
  # With the password (on curl's stdin, not its command line): the UI
  # itself, which may still be starting.
  for _ in $(seq 1 60); do
    code="$(printf 'user = "%s:%s"\n' "$ui_user" "$ui_password" | ui_answers "$scheme://$ui/" -k -K -)"
    [ "$code" = 200 ] && break
    sleep 0.5
  done
  [ "$code" = 200 ] || echo "stack: warning: the Temporal UI answers $code behind its door (is it running on $temporal_ui?)" >&2

  cat <<EOF
stack: running (stop it with make stack-stop)
  shop and API (HAProxy)   http://$lb
  Temporal Web UI          $scheme://$ui  (HAProxy; user $ui_user, password $shown)
  Jaeger (traces)          http://127.0.0.1:16686
  HAProxy stats            http://$stats
  Prometheus               http://$prom  (alerts: http://$prom/alerts; targets: http://$prom/targets)
  APIs                     http://${apis[0]}  http://${apis[1]}
  workers' metrics         http://${workers[0]}/metrics  http://${workers[1]}/metrics
  Redis Cluster            $SECKILL_REDIS_ADDR
  Temporal                 $TEMPORAL_ADDRESS${TEMPORAL_TLS_DIR:+ (mTLS; CA and client certificate in $TEMPORAL_TLS_DIR)}
  MySQL database           seckill_stack
  secrets                  $dir/secrets.env (SECKILL_ADMIN_TOKEN for the admin API)
  logs                     $dir/*.log
EOF
  scripts/temporal-server.sh status 2>/dev/null | sed 's/^/  /' || true
}

# check sells one unit through the running stack as a shopper would (the
# load balancer, a purchase with its Idempotency-Key, the sandbox's
# checkout, the webhook), then finds the purchase's trace in Jaeger, every
# Prometheus target up with the alert rules loaded, and the sale's
# invariants held (seckill reconcile). Exit 1 at the first thing missing.
check() {
  alive "$dir/api-1.pid" || { echo "stack: not running (make stack)" >&2; exit 1; }
  fail() { echo "stack check: $*" >&2; exit 1; }
  # await_status polls the order until it shows $1, half a minute at most.
  await_status() {
    for _ in $(seq 1 150); do
      status="$(curl -s "http://$lb/api/v1/orders/$no" -H "Authorization: Bearer $tok" | field status)"
      [ "$status" = "$1" ] && return
      sleep 0.2
    done
    fail "order $no is $status, not $1"
  }
  field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p"; }
  set -a
  . "$dir/secrets.env"
  eval "$(scripts/redis-cluster.sh env)"
  eval "$(scripts/temporal-server.sh env)"
  set +a
  local dsn="${SECKILL_MYSQL_DSN:-root:@tcp(127.0.0.1:3306)/seckill?parseTime=true}"
  dsn="${dsn%%\?*}"
  export SECKILL_API="http://$lb" SECKILL_MYSQL_DSN="${dsn%/*}/seckill_stack?parseTime=true"
  local start sid tok key out no trace co pid status="" spans
  start="$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%SZ)"
  sid="$(bin/seckill session create --title "stack check" --per-user-limit 1 --sku 1 --price-cents 990 --stock 2 \
    --start-at "$start" --end-at "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" | tr -d ' \n' | field id)"
  [ -n "$sid" ] || fail "no session created"
  tok="$(bin/seckill token --user "$((RANDOM + 100000))")"
  key="$(bin/seckill key)"
  for _ in $(seq 1 50); do
    out="$(curl -s -D "$dir/check-headers" -X POST "http://$lb/api/v1/sessions/$sid/orders" \
      -H "Authorization: Bearer $tok" -H "Idempotency-Key: $key" -H 'Content-Type: application/json' -d '{}')"
    no="$(printf '%s' "$out" | field order_no)"
    [ -n "$no" ] && break
    sleep 0.2 # NOT_STARTED until its start
  done
  [ -n "$no" ] || fail "session $sid sold nothing: $out"
  trace="$(sed -n 's/^[Xx]-[Rr]equest-[Ii][Dd]: *\([0-9a-f]*\).*/\1/p' "$dir/check-headers")"
  # The shopper pays once the order shows WAIT_PAY, so the trace has the
  # starter's StartWorkflow (a payment before it starts the workflow with
  # SignalWithStartWorkflow instead).
  await_status WAIT_PAY
  for _ in $(seq 1 50); do
    co="$(curl -s -X POST "http://$lb/api/v1/orders/$no/payment" -H "Authorization: Bearer $tok")"
    pid="$(printf '%s' "$co" | field payment_id)"
    [ -n "$pid" ] && break
    sleep 0.2
  done
  [ -n "$pid" ] || fail "order $no opened no checkout: $co"
  curl -fsS -o /dev/null -X POST "$(printf '%s' "$co" | field checkout_url)" -d action=pay || fail "the sandbox's checkout refused to pay $pid"
  await_status PAID
  echo "stack check: session $sid sold order $no, paid ($pid); trace $trace"
  # Each process exports its spans in batches (every few seconds): wait,
  # at most half a minute, until every one of them has reached Jaeger.
  local missing=""
  for _ in $(seq 1 150); do
    spans="$(curl -s "http://127.0.0.1:16686/api/traces/$trace")"
    missing=""
    for want in 'POST /api/v1/sessions/:id/orders' StartWorkflow:OrderWorkflow RunWorkflow:OrderWorkflow \
      RunActivity:CreateOrder RunActivity:ApplyPayment 'INSERT orders' evalsha; do
      case "$spans" in *"\"operationName\":\"$want\""*) ;; *) missing="$missing, $want" ;; esac
    done
    [ -z "$missing" ] && break
    sleep 0.2
  done
  [ -z "$missing" ] || fail "the trace in Jaeger has no span ${missing#, }"
  echo "stack check: Jaeger has the purchase's trace, from the click to the row"
  # A fresh Prometheus finds its targets and scrapes them within its
  # intervals: wait for every job up, at most a minute.
  local scraped=""
  for _ in $(seq 1 120); do
    out="$(curl -s "http://$prom/api/v1/targets")"
    scraped=yes
    for job in api worker temporal; do
      case "$out" in *"\"job\":\"$job\""*) ;; *) scraped="" ;; esac
    done
    case "$out" in *'"health":"down"'* | *'"health":"unknown"'*) scraped="" ;; esac
    [ -n "$scraped" ] && break
    sleep 0.5
  done
  [ -n "$scraped" ] || fail "a Prometheus target is not up (api, worker, temporal): http://$prom/targets"
  case "$(curl -s "http://$prom/api/v1/rules")" in *'"type":"alerting"'*) ;; *) fail "Prometheus has no alert rules loaded" ;; esac
  echo "stack check: Prometheus scrapes every target, alert rules loaded"
  bin/seckill reconcile --session "$sid" >/dev/null || fail "session $sid breaks an invariant: bin/seckill reconcile --session $sid"
  echo "stack check: session $sid reconciles (MySQL and Redis agree, nothing stuck)"
}

case "${1:-}" in
start) start ;;
check) check ;;
stop) stop ;;
status) status ;;
*)
  echo "usage: $0 start|stop|status|check" >&2
  exit 2
  ;;
esac
