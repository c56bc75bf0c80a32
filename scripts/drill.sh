#!/usr/bin/env bash
# make drill: rehearse a sale on a local stack. Starts the Temporal dev
# server (if needed), an API and a worker on a fresh Redis prefix, runs
# `seckill drill` with the worker killed (SIGKILL) mid-burst and a new one
# started after it, prints the result and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/temporal-dev.sh >/dev/null
go build -o bin/seckill ./cmd/seckill

run="drill-$(date +%s)"
export SECKILL_REDIS_PREFIX="$run" SECKILL_TASK_QUEUE="$run" SECKILL_HTTP_ADDR="${DRILL_ADDR:-127.0.0.1:18090}"
export SECKILL_JWT_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SECKILL_WEBHOOK_SECRET="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SECKILL_ADMIN_TOKEN="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export SECKILL_LIMIT_IP_RPS=0 SECKILL_LIMIT_USER_RPS=0 SECKILL_RECONCILE_EVERY=0
mkdir -p .temporal
log=".temporal/$run.log"

bin/seckill migrate >/dev/null
bin/seckill api >>"$log" 2>&1 & api=$!
bin/seckill worker >>"$log" 2>&1 & worker=$!
cleanup() {
  kill "$api" "$worker" 2>/dev/null || true
  if [ -f ".temporal/$run.worker2" ]; then kill "$(cat ".temporal/$run.worker2")" 2>/dev/null || true; rm -f ".temporal/$run.worker2"; fi
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -fsS "http://$SECKILL_HTTP_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

bin/seckill drill --api "http://$SECKILL_HTTP_ADDR" "$@" \
  --kill-pid "$worker" \
  --restart-cmd "bin/seckill worker >>$log 2>&1 & echo \$! > .temporal/$run.worker2"
