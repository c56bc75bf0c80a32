#!/usr/bin/env bash
# Reproduces the measurements of docs/CAPACITY.md: what an admission and an
# order cost Redis, MySQL and Temporal, counted on servers nobody else
# uses, then the few throughput figures the sizing needs.
#
#   1. Counts: `seckill-lab capacity` sells a small sale (CAPACITY_ORDERS
#      orders per path: paid, cancelled, timed out) on a redis-server of its
#      own, a MySQL user of its own (MariaDB's userstat) and the Temporal
#      dev server this script starts with its Prometheus metrics on a known
#      port; it reads each server's counters around every phase and writes
#      <CAPACITY_OUT>.json and .md.
#   2. Throughput (CAPACITY_THROUGHPUT=0 skips it): the admission script
#      through go-redis on a private redis-server (redis BenchmarkAdmit),
#      and the API's sold-out fast path and a bare Fiber handler on one
#      core (api benchmarks), CAPACITY_REPEAT (3) times each, side by side:
#      <CAPACITY_OUT>-throughput.txt.
#
# Then it stops what it started.
#
# Env: CAPACITY_ORDERS (100), CAPACITY_PAY_TIMEOUT (30s; must outlast the
# phases before the timeouts), CAPACITY_OUT (capacity-report),
# CAPACITY_TEMPORAL_PORT (7501; its Web UI on +1000, its metrics on +2000;
# nothing may answer there yet), CAPACITY_REDIS_PORT (30101, the
# throughput runs' redis-server), CAPACITY_THROUGHPUT (1), CAPACITY_REPEAT (3).
# Needs MariaDB (SECKILL_MYSQL_DSN, default root on 127.0.0.1:3306: it
# creates a user and turns the global userstat on) and redis-server on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${CAPACITY_OUT:-capacity-report}"
port="${CAPACITY_TEMPORAL_PORT:-7501}"
export TEMPORAL_PORT="$port" TEMPORAL_UI_PORT="$((port + 1000))" TEMPORAL_METRICS_PORT="$((port + 2000))"

redis_pid="" redis_dir=""
cleanup() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  if [ -n "$redis_dir" ]; then rm -rf "$redis_dir"; fi
  scripts/temporal-dev.sh stop
}

started="$(scripts/temporal-dev.sh start)" || { echo "$started" >&2; exit 1; }
echo "$started"
if [[ "$started" != *"temporal: started"* ]]; then
  echo "capacity: a server already answers on :$port; the counts need one of their own (set CAPACITY_TEMPORAL_PORT)" >&2
  exit 1
fi
trap cleanup EXIT

echo "capacity: counting ($(date -u +%FT%TZ), commit $(git rev-parse --short HEAD))"
make --no-print-directory lab
SECKILL_TEMPORAL_ADDR="127.0.0.1:$port" SECKILL_MYSQL_DSN="${SECKILL_MYSQL_DSN:-root:@tcp(127.0.0.1:3306)/}" \
  bin/seckill-lab capacity --orders "${CAPACITY_ORDERS:-100}" --pay-timeout "${CAPACITY_PAY_TIMEOUT:-30s}" \
  --temporal-metrics "http://127.0.0.1:$TEMPORAL_METRICS_PORT/metrics" \
  --temporal-pid "$(cat ".temporal/server-$port.pid")" \
  --commit "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +dirty)" --out "$out"
echo "capacity: counts in $out.md and $out.json"

if [ "${CAPACITY_THROUGHPUT:-1}" != 0 ]; then
  rport="${CAPACITY_REDIS_PORT:-30101}"
  redis_dir="$(mktemp -d -t seckill-capacity-redis-XXXXXX)"
  redis-server --bind 127.0.0.1 --port "$rport" --dir "$redis_dir" --save "" --appendonly no --loglevel warning \
    >"$redis_dir/log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 1 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  n="${CAPACITY_REPEAT:-3}"
  {
    echo "# $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), $(nproc) CPUs"
    echo "# the admission script through go-redis, 32×GOMAXPROCS callers, private redis-server :$rport"
    SECKILL_TEST_REDIS_ADDR="127.0.0.1:$rport" go test ./redis -run '^$' -bench Admit -benchtime 2s -count "$n"
    echo "# the API's sold-out fast path and a bare Fiber handler, in process, one core"
    go test ./api -run '^$' -bench 'SoldOutFastPath|BareFiber' -cpu 1 -benchtime 2s -count "$n"
  } 2>&1 | tee "$out-throughput.txt"
  echo "capacity: throughput in $out-throughput.txt"
fi
