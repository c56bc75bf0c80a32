#!/usr/bin/env bash
# make bench: a small, reproducible load test with baselines on a local
# stack. Starts the Temporal dev server (if needed), an API and a worker as
# separate processes (as in production) on a fresh Redis prefix and task
# queue, and runs `seckill-lab bench --baselines` twice:
#
#   1. 500 units, 20,000 shoppers × 2 requests (a burst of about two
#      seconds: half-second bursts made every ratio swing by half from one
#      round to the next), an unrecorded warm-up step,
#      then BENCH_REPEAT (3) interleaved rounds (ratios are medians, ratios_spread their spread), and the
#      admission script on private redis-servers with no persistence, AOF
#      everysec and AOF always (--redis-aof): bench-report.{json,html};
#   2. 5,000 units, 20,000 shoppers × 1 request, a warm-up (500 units), then
#      one round: the 5,000-winner scenario, the order tier at real burst
#      size (a few minutes: every winner must reach WAIT_PAY and the unpaid
#      half time out; BENCH_5K=0 skips it), its creation, payments and
#      closes each measured alone (--pay-after-creation):
#      bench-report-5k.{json,html}.
#
# Every purchase carries a fresh UUIDv7 Idempotency-Key stamped as it is
# sent, as the shop page sends them (--keys); each round also runs the
# admission-only API's burst without keys beside the keyed one, and the
# sold-out burst with and without keys between slices of bare Fiber: the
# table and bench-report.json give the keyed and unkeyed figures side by
# side (burst_keyed_vs_unkeyed, losers_keyed_vs_unkeyed,
# refused_p50_keyed_vs_unkeyed, soldout_vs_fiber, soldout_keyed_vs_fiber).
#
# Then it stops what it started. Extra arguments go to both runs of
# `seckill-lab bench`.
#
# Env: BENCH_REPEAT (3), BENCH_5K (1; 0 skips the 5,000-winner run), BENCH_PIN=1 (taskset: the API and
# Redis on CPU 0, Temporal, the worker and MySQL on CPU 1, put back
# afterwards), BENCH_REDIS_AOF=no|everysec|always (run the whole stack on a
# private redis-server with that setting instead of SECKILL_REDIS_ADDR),
# BENCH_PAY_TIMEOUT (20s, or BENCH_5K_PAY_TIMEOUT with BENCH_DRAW; BENCH_5K_PAY_TIMEOUT, 150s, for the 5,000-winner run), BENCH_CAPTCHAS (1000 captchas drawn after the rounds: what
# the human check costs; 0 skips), BENCH_REGISTRATIONS (0; N: after the rounds of
# the first run, a reserved sale that N shoppers register for through the API,
# then the same burst at its start: --registrations), BENCH_DRAW (0; N: after
# that, a draw sale of N units that every shopper registers for, drawn by
# its workflow at the start, then bought by its winners: --draw), BENCH_ITEMS
# (4; N: a sale of N sizes with the same stock, the burst spread over them,
# against the one-item burst: --items; 0 skips), BENCH_ADDR.
set -euo pipefail
cd "$(dirname "$0")/.."

# The per-user limit stays on (each shopper sends only a couple of requests).
# A draw sale's pay deadlines count from its winners' 202s, all within a few
# seconds, while its thousands of orders are created at the order tier's pace
# (minutes on a small machine): with BENCH_DRAW the pay timeout defaults to
# the 5,000-winner run's, so that every winner's order is created, and half
# of them paid, before its deadline.
pay_timeout=20s
if [ "${BENCH_DRAW:-0}" != 0 ]; then pay_timeout="${BENCH_5K_PAY_TIMEOUT:-150s}"; fi
export SECKILL_PAY_TIMEOUT="${BENCH_PAY_TIMEOUT:-$pay_timeout}"
export SECKILL_LOG_LEVEL=WARN
API_ENV="SECKILL_PPROF_ADDR=${BENCH_PPROF_ADDR:-}"
run="bench-$(date +%s)" addr="${BENCH_ADDR:-127.0.0.1:18091}"

redis_pid="" redis_dir=""
stop_redis() {
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; fi
  if [ -n "$redis_dir" ]; then rm -rf "$redis_dir"; fi
}
if [ -n "${BENCH_REDIS_AOF:-}" ]; then
  case "$BENCH_REDIS_AOF" in
    no) aof=(--appendonly no) ;;
    everysec|always) aof=(--appendonly yes --appendfsync "$BENCH_REDIS_AOF") ;;
    *) echo "BENCH_REDIS_AOF must be no, everysec or always" >&2; exit 1 ;;
  esac
  command -v redis-server >/dev/null || { echo "BENCH_REDIS_AOF needs redis-server on the PATH" >&2; exit 1; }
  redis_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  redis_dir="$(mktemp -d -t seckill-bench-redis-XXXXXX)"
  redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$redis_dir" --save "" --loglevel warning "${aof[@]}" \
    >"$redis_dir/log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 1 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  export SECKILL_REDIS_ADDR="127.0.0.1:$redis_port"
  echo "bench: the stack's Redis is a private redis-server on $SECKILL_REDIS_ADDR (${aof[*]})"
fi

stack_on_exit() { stop_redis; }
source scripts/local-stack.sh

pin=()
if [ "${BENCH_PIN:-0}" = 1 ]; then pin=(--pin --pin-worker "$worker"); fi

bin/seckill-lab bench --api "http://$SECKILL_HTTP_ADDR" --pay-timeout "$SECKILL_PAY_TIMEOUT" --baselines \
  --users 20000 --requests-per-user 2 --stock 500 --concurrency 256 \
  --warmup --repeat "${BENCH_REPEAT:-3}" --redis-aof all --captchas "${BENCH_CAPTCHAS:-1000}" "${pin[@]}" \
  --registrations "${BENCH_REGISTRATIONS:-0}" --draw "${BENCH_DRAW:-0}" --items "${BENCH_ITEMS:-4}" \
  --json bench-report.json --html bench-report.html "$@"

if [ "${BENCH_5K:-1}" != 0 ]; then
  # 5,000 winners: the order tier at real burst size. One round; a longer
  # settle, since every winner must reach WAIT_PAY for the run to pass. The
  # pay deadlines count from the 202s, so they all fall within the burst's
  # second: a pay timeout longer than the creation takes (BENCH_5K_PAY_TIMEOUT)
  # lets every order be created and paid first, then fires the 2,500
  # unpaid orders' timers together, which is what a sale's closing is.
  # The restarted API is warmed first (500 units, all paid), as the 500-unit
  # rounds are: its first burst pays for cold pools and a growing heap, and
  # the admission-only baseline it is compared with fills its pool first.
  # A dev server this script started is restarted empty first, so that
  # the 5,000-winner run and its baselines start from the same footing as
  # the 500-unit rounds did (the server slowed as those rounds went on); a
  # server someone else runs is used as it is.
  export SECKILL_PAY_TIMEOUT="${BENCH_5K_PAY_TIMEOUT:-150s}"
  stop_processes
  restart_temporal || echo "bench: Temporal ${SECKILL_TEMPORAL_ADDR} is not this run's dev server: the 5,000-winner run uses it as it is"
  start_processes
  if [ "${BENCH_PIN:-0}" = 1 ]; then pin=(--pin --pin-worker "$worker"); fi
  bin/seckill-lab bench --api "http://$SECKILL_HTTP_ADDR" --pay-timeout "$SECKILL_PAY_TIMEOUT" --baselines \
    --users 20000 --requests-per-user 1 --stock 5000 --concurrency 256 --settle 4m --pay-after-creation --warmup \
    "${pin[@]}" --json bench-report-5k.json --html bench-report-5k.html "$@"
fi
