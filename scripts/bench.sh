#!/usr/bin/env bash
# make bench: a small, reproducible load test with baselines on a local
# stack. Starts the Temporal dev server (if needed), an API and a worker as
# separate processes (as in production) on a fresh Redis prefix and task
# queue, runs `seckill bench --baselines`, writes bench-report.{json,html}
# and stops what it started. Extra arguments go to `seckill bench`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The per-user limit stays on (each shopper sends only a couple of requests).
export SECKILL_PAY_TIMEOUT="${BENCH_PAY_TIMEOUT:-20s}" SECKILL_START_TIMEOUT="${BENCH_START_TIMEOUT:-300ms}"
export SECKILL_LOG_LEVEL=WARN
API_ENV="SECKILL_PPROF_ADDR=${BENCH_PPROF_ADDR:-}"
run="bench-$(date +%s)" addr="${BENCH_ADDR:-127.0.0.1:18091}"
source scripts/local-stack.sh

bin/seckill bench --api "http://$SECKILL_HTTP_ADDR" --pay-timeout "$SECKILL_PAY_TIMEOUT" --baselines \
  --users 5000 --requests-per-user 2 --stock 500 --concurrency 256 \
  --json bench-report.json --html bench-report.html "$@"
