#!/usr/bin/env bash
# A Redis Cluster on loopback for local runs and tests: 6 redis-server
# processes (3 masters, 3 replicas) from the machine's redis-server.
#
#   scripts/redis-cluster.sh start    start the nodes, create the cluster, wait for cluster_state:ok
#   scripts/redis-cluster.sh stop     stop the nodes `start` started (their recorded PIDs only)
#   scripts/redis-cluster.sh status   the nodes and their roles, or "not running"
#   scripts/redis-cluster.sh env      print SECKILL_REDIS_ADDR=<the 6 addresses>
#
# Env: REDIS_CLUSTER_PORT (30001: the nodes take this port and the next 5),
# REDIS_CLUSTER_BUS_PORT (the port + 100: the nodes' cluster bus ports; not
# Redis's usual + 10000, which lands in Linux's ephemeral port range where
# any outgoing connection may hold it), REDIS_CLUSTER_DIR (.redis-cluster,
# gitignored: one directory per node with its config, data, log and pid),
# REDIS_CLUSTER_NODE_TIMEOUT (2000 ms: how long a master may stay silent
# before its replica takes over), REDIS_CLUSTER_APPENDONLY (yes: everysec
# AOF, as deployed).
set -euo pipefail
cd "$(dirname "$0")/.."

base="${REDIS_CLUSTER_PORT:-30001}"
bus="${REDIS_CLUSTER_BUS_PORT:-$((base + 100))}"
dir="${REDIS_CLUSTER_DIR:-.redis-cluster}"
node_timeout="${REDIS_CLUSTER_NODE_TIMEOUT:-2000}"
appendonly="${REDIS_CLUSTER_APPENDONLY:-yes}"
ports=()
for i in 0 1 2 3 4 5; do ports+=($((base + i))); done

addrs() {
  local IFS=,
  local a=()
  for p in "${ports[@]}"; do a+=("127.0.0.1:${p}"); done
  echo "${a[*]}"
}

# pid_of prints the pid of the node this script started on port p, if it
# still runs (a stale pid file, or a pid reused by another program, is not
# ours).
pid_of() {
  local p="$1" f="${dir}/${1}/redis.pid" pid
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ -n "$pid" ]] && ps -p "$pid" -o args= 2>/dev/null | grep -q "redis-server .*:${p}" || return 1
  echo "$pid"
}

stop() {
  local p pid
  for p in "${ports[@]}"; do
    if pid="$(pid_of "$p")"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      echo "redis-cluster: stopped :${p} (pid ${pid})"
    fi
    rm -f "${dir}/${p}/redis.pid"
  done
}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

start() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
    echo "redis-cluster: redis-server and redis-cli are needed (apt-get install redis-server)" >&2
    exit 1
  }
  local p
  for p in "${ports[@]}"; do
    if pid_of "$p" >/dev/null; then
      echo "redis-cluster: already running on $(addrs) (stop it with scripts/redis-cluster.sh stop)" >&2
      exit 1
    fi
  done
  local i=0
  for p in "${ports[@]}"; do
    # A fresh node: the cluster is created anew on every start.
    rm -rf "${dir:?}/${p}"
    mkdir -p "${dir}/${p}"
    redis-server --port "$p" --bind 127.0.0.1 --daemonize yes \
      --dir "$(cd "${dir}/${p}" && pwd)" --pidfile redis.pid --logfile redis.log \
      --cluster-enabled yes --cluster-port $((bus + i)) --cluster-config-file nodes.conf \
      --cluster-node-timeout "$node_timeout" \
      --appendonly "$appendonly" --appendfsync everysec --save ""
    i=$((i + 1))
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 50); do cli "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    cli "$p" ping >/dev/null || { echo "redis-cluster: node :${p} did not start; see ${dir}/${p}/redis.log" >&2; stop; exit 1; }
  done
  local seeds=()
  for p in "${ports[@]}"; do seeds+=("127.0.0.1:${p}"); done
  # The first three are the masters, the others their replicas.
  redis-cli --cluster create "${seeds[@]}" --cluster-replicas 1 --cluster-yes >"${dir}/create-${base}.log" 2>&1 || {
    cat "${dir}/create-${base}.log" >&2
    stop
    exit 1
  }
  # Ready: every node sees the whole cluster OK, and every replica's
  # link to its master is up (a replica still syncing could not take over).
  local ok
  for _ in $(seq 1 300); do
    ok=1
    for p in "${ports[@]}"; do
      cli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || ok=0
      if cli "$p" role 2>/dev/null | head -1 | grep -q slave; then
        cli "$p" info replication 2>/dev/null | grep -q '^master_link_status:up' || ok=0
      fi
    done
    [[ $ok == 1 ]] && break
    sleep 0.1
  done
  if [[ $ok != 1 ]]; then
    echo "redis-cluster: the cluster did not become ready; see ${dir}/*/redis.log" >&2
    stop
    exit 1
  fi
  echo "redis-cluster: started on $(addrs) (node timeout ${node_timeout} ms); stop it with scripts/redis-cluster.sh stop"
}

status() {
  local p up=0
  for p in "${ports[@]}"; do
    if pid="$(pid_of "$p")"; then
      up=1
      echo "127.0.0.1:${p} pid ${pid} $(cli "$p" role 2>/dev/null | head -1)"
    fi
  done
  if [[ $up == 0 ]]; then
    echo "redis-cluster: not running"
    return 1
  fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "SECKILL_REDIS_ADDR=$(addrs)" ;;
  *)
    echo "usage: $0 start|stop|status|env" >&2
    exit 2
    ;;
esac
