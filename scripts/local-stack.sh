# Sourced by bench.sh and drill.sh: builds seckill and seckill-lab and
# starts a throwaway local stack (the Temporal dev server unless one
# answers, migrations, an API and a worker), isolated from anything else on the machine: a fresh
# MySQL database, Redis prefix and task queue named after the run, the
# worker's ops endpoints on a port of their own, fresh secrets. Waits until
# the API and the worker are ready, or exits non-zero with the last lines of
# the log. On exit it stops what it started (the API, the worker, and the
# Temporal dev server if it started one) and drops the database, unless the
# run failed (then the database is kept for a look and named).
#
#   run=<name> addr=<host:port> source scripts/local-stack.sh
# Sets: log, api, worker (pids), start_processes, stop_processes,
# restart_processes, restart_temporal, and the EXIT trap, which also calls the
# caller's stack_on_exit function if there is one (define it before
# sourcing: it then runs even when the stack fails to start). Extra
# SECKILL_* settings: export them first; API_ENV adds variables for the API
# process only.
# Env: SECKILL_MYSQL_DSN (the server and parameters of the run's database;
# its database name is replaced), STACK_WORKER_ADDR (the worker's ops
# address; default: the API's host, its port + 1000), TEMPORAL_PORT.
api="" worker="" temporal_started=0 stack_db=""

stop_stack() {
  local rc=$?
  if declare -F stack_on_exit >/dev/null; then stack_on_exit; fi
  if [ -n "$api" ] || [ -n "$worker" ]; then
    kill $api $worker 2>/dev/null || true
    { wait $api $worker; } 2>/dev/null || true
  fi
  if [ -n "$stack_db" ] && [ "$rc" -eq 0 ]; then
    bin/seckill migrate --drop >/dev/null 2>&1 || echo "stack: could not drop the database ${stack_db}" >&2
  elif [ -n "$stack_db" ]; then
    echo "stack: the run failed (exit $rc); kept its database ${stack_db} and log $log" >&2
  fi
  if [ "$temporal_started" = 1 ]; then scripts/temporal-dev.sh stop; fi
}
trap stop_stack EXIT

temporal_out="$(scripts/temporal-dev.sh start)" || { echo "$temporal_out" >&2; exit 1; }
if [[ "$temporal_out" == *"temporal: started"* ]]; then temporal_started=1; fi
make --no-print-directory -s build
make --no-print-directory -s lab # the bench and the drill

secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
export SECKILL_REDIS_PREFIX="$run" SECKILL_TASK_QUEUE="$run" SECKILL_HTTP_ADDR="$addr"
export SECKILL_TEMPORAL_ADDR="${SECKILL_TEMPORAL_ADDR:-127.0.0.1:${TEMPORAL_PORT:-7233}}"
# A database of the run's own (DSN: user:password@tcp(host:port)/name?params).
dsn="${SECKILL_MYSQL_DSN:-root:@tcp(127.0.0.1:3306)/seckill?parseTime=true}"
dsn_params="${dsn#"${dsn%%\?*}"}"
dsn_server="${dsn%%\?*}"
dsn_server="${dsn_server%/*}"
db_name="seckill_${run//[^a-zA-Z0-9]/_}"
export SECKILL_MYSQL_DSN="${dsn_server}/${db_name}${dsn_params:-?parseTime=true}"
# The worker's ops endpoints on a port of their own: a `seckill dev` or
# another stack on :8081 must not stop this worker from starting.
export SECKILL_WORKER_HTTP_ADDR="${STACK_WORKER_ADDR:-${addr%:*}:$((${addr##*:} + 1000))}"
export SECKILL_JWT_SECRET="$(secret)" SECKILL_WEBHOOK_SECRET="$(secret)" SECKILL_ADMIN_TOKEN="$(secret)"
export SECKILL_DRAW_KEY="$(secret)$(secret)"
# Every shopper comes from this machine: the per-IP limits must be off.
export SECKILL_LIMIT_IP_RPS=0 SECKILL_LIMIT_READ_RPS=0 SECKILL_RECONCILE_EVERY=0
# A throwaway stack: refunds go to the in-memory sandbox, on purpose (the
# worker refuses to start without a provider named explicitly).
export SECKILL_PAYMENT_PROVIDER=sandbox
# No balancer to leave: a stopped API (between bench rounds) stops at once.
export SECKILL_DRAIN_DELAY="${SECKILL_DRAIN_DELAY:-0}"
mkdir -p .temporal
log=".temporal/$run.log"

# stack_fail says why the stack is not usable, with the last log lines, and exits.
stack_fail() {
  echo "stack: $1; last lines of $log:" >&2
  tail -30 "$log" >&2
  exit 1
}

echo "stack: $run: API http://$SECKILL_HTTP_ADDR, worker ops http://$SECKILL_WORKER_HTTP_ADDR, database ${db_name}, Temporal $SECKILL_TEMPORAL_ADDR, log $log"
stack_db="$db_name"
bin/seckill migrate >>"$log" 2>&1 || stack_fail "migrations failed"
# start_processes starts the API and the worker with the current SECKILL_*
# settings and waits until both are ready.
start_processes() {
  env ${API_ENV:-} bin/seckill api >>"$log" 2>&1 & api=$!
  bin/seckill worker >>"$log" 2>&1 & worker=$!
  local ready=0
  for _ in $(seq 1 300); do
    kill -0 "$api" 2>/dev/null || stack_fail "the API (pid $api) exited"
    kill -0 "$worker" 2>/dev/null || stack_fail "the worker (pid $worker) exited"
    if curl -fsS "http://$SECKILL_HTTP_ADDR/readyz" >/dev/null 2>&1 &&
      curl -fsS "http://$SECKILL_WORKER_HTTP_ADDR/readyz" >/dev/null 2>&1; then
      ready=1
      break
    fi
    sleep 0.2
  done
  [ "$ready" = 1 ] || stack_fail "the API or the worker did not become ready within 60 s"
}

# restart_temporal gives the run a fresh, empty Temporal dev server, if the
# stack started the one it runs on (someone else's server is left alone;
# it returns 1 then): the in-memory dev server keeps every workflow of the
# run, and slowed as a long run went on (its no-op workflows fell from
# 126-132/s to 75/s within one make bench). Call it between runs, with
# nothing in flight, between stop_processes and start_processes.
restart_temporal() {
  [ "$temporal_started" = 1 ] || return 1
  scripts/temporal-dev.sh stop >/dev/null
  temporal_out="$(scripts/temporal-dev.sh start)" || { echo "$temporal_out" >&2; exit 1; }
  echo "stack: ${temporal_out##*$'\n'}"
}

# restart_processes stops the API and the worker and starts them again with
# the SECKILL_* settings as they are now (same database, prefix and queue):
# a run that needs another setting, e.g. a longer pay timeout.
restart_processes() {
  stop_processes
  start_processes
}

# stop_processes stops the API and the worker.
stop_processes() {
  kill $api $worker 2>/dev/null || true
  { wait $api $worker; } 2>/dev/null || true
  api="" worker=""
}

start_processes
