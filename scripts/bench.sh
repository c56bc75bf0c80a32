#!/usr/bin/env bash
# make bench: a small, reproducible load test with baselines on a local
# stack. Starts the Temporal dev server (if needed), an API and a worker as
# separate processes (as in production) on a fresh Redis prefix and task
# queue, runs `seckill bench --baselines`, writes bench-report.{json,html}
# and stops what it started. Extra arguments go to `seckill bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/temporal-dev.sh >/dev/null
go build -o bin/seckill ./cmd/seckill

run="bench-$(date +%s)"
export SECKILL_REDIS_PREFIX="$run" SECKILL_TASK_QUEUE="$run" SECKILL_HTTP_ADDR="${BENCH_ADDR:-127.0.0.1:18091}"
export SECKILL_JWT_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SECKILL_WEBHOOK_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SECKILL_ADMIN_TOKEN="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Every shopper comes from this machine: the per-IP limit must be off; the
# per-user limit stays on (each shopper sends only a couple of requests).
export SECKILL_LIMIT_IP_RPS=0 SECKILL_PAY_TIMEOUT="${BENCH_PAY_TIMEOUT:-20s}" SECKILL_START_TIMEOUT="${BENCH_START_TIMEOUT:-300ms}" SECKILL_RECONCILE_EVERY=0
export SECKILL_LOG_LEVEL=WARN
mkdir -p .temporal
log=".temporal/$run.log"

bin/seckill migrate >/dev/null
SECKILL_PPROF_ADDR="${BENCH_PPROF_ADDR:-}" bin/seckill api >>"$log" 2>&1 & api=$!
bin/seckill worker >>"$log" 2>&1 & worker=$!
trap 'kill $api $worker 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -fsS "http://$SECKILL_HTTP_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

bin/seckill bench --api "http://$SECKILL_HTTP_ADDR" --pay-timeout "$SECKILL_PAY_TIMEOUT" --baselines \
  --users 5000 --requests-per-user 2 --stock 500 --concurrency 256 \
  --json bench-report.json --html bench-report.html "$@"
