# Sourced by bench.sh and drill.sh: builds seckill and starts a throwaway
# local stack (Temporal dev server if needed, migrations, an API and a
# worker on a fresh Redis prefix and task queue, fresh secrets), waits until
# the API is ready, and stops the API and worker on exit.
#
#   run=<name> addr=<host:port> source scripts/local-stack.sh
# Sets: log, api, worker (pids). Extra SECKILL_* settings: export them first;
# API_ENV adds variables for the API process only.
scripts/temporal-dev.sh >/dev/null
go build -o bin/seckill ./cmd/seckill

secret() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
export SECKILL_REDIS_PREFIX="$run" SECKILL_TASK_QUEUE="$run" SECKILL_HTTP_ADDR="$addr"
export SECKILL_JWT_SECRET="$(secret)" SECKILL_WEBHOOK_SECRET="$(secret)" SECKILL_ADMIN_TOKEN="$(secret)"
# Every shopper comes from this machine: the per-IP limits must be off.
export SECKILL_LIMIT_IP_RPS=0 SECKILL_LIMIT_READ_RPS=0 SECKILL_RECONCILE_EVERY=0
# A throwaway stack: refunds go to the in-memory sandbox, on purpose (the
# worker refuses to start without a provider named explicitly).
export SECKILL_PAYMENT_PROVIDER=sandbox
mkdir -p .temporal
log=".temporal/$run.log"

bin/seckill migrate >/dev/null
env ${API_ENV:-} bin/seckill api >>"$log" 2>&1 & api=$!
bin/seckill worker >>"$log" 2>&1 & worker=$!
stop_stack() { kill "$api" "$worker" 2>/dev/null || true; }
trap stop_stack EXIT
for _ in $(seq 1 50); do curl -fsS "http://$SECKILL_HTTP_ADDR/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
