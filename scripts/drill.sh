#!/usr/bin/env bash
# make drill: rehearse a sale on a local stack. Starts the Temporal dev
# server (if needed), an API and a worker on a fresh Redis prefix, runs
# `seckill-lab drill` with the worker killed (SIGKILL) mid-burst and a new one
# started after it, prints the result and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

export SECKILL_LIMIT_USER_RPS=0
run="drill-$(date +%s)" addr="${DRILL_ADDR:-127.0.0.1:18090}"
second=".temporal/$run.worker2"
stack_on_exit() { if [ -f "$second" ]; then kill "$(cat "$second")" 2>/dev/null || true; rm -f "$second"; fi; }
source scripts/local-stack.sh

bin/seckill-lab drill --api "http://$SECKILL_HTTP_ADDR" "$@" \
  --kill-pid "$worker" \
  --restart-cmd "bin/seckill worker >>$log 2>&1 & echo \$! > $second"
