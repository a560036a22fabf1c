# shellcheck shell=bash
#? A local Redis Cluster for tests: 6 nodes (3 primaries, 3 replicas) from
#? the installed redis-server, on loopback ports CLUSTER_BASE_PORT+1..+6,
#? with their data under .data/cluster/ (nothing persisted). Sourced by
#? scripts/test.sh and scripts/faults.sh:
#?
#?   cluster_up      starts the nodes, creates the cluster, waits until it
#?                   serves every slot; exports REDIS_CLUSTER_NODES
#?   cluster_down    stops the nodes it started
#?   cluster_primary_port N   the port of the Nth primary (1..3), for faults

REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CLUSTER_DIR="$REPO_ROOT/.data/cluster"
CLUSTER_BASE_PORT=${CLUSTER_BASE_PORT:-17000}
# Small, so a failover after a killed primary takes about a second.
CLUSTER_NODE_TIMEOUT_MS=${CLUSTER_NODE_TIMEOUT_MS:-1000}

cluster_log() { printf '\033[1;36m[cluster]\033[0m %s\n' "$*"; }

cluster_ports() { seq $((CLUSTER_BASE_PORT + 1)) $((CLUSTER_BASE_PORT + 6)); }

cluster_start_node() {
  local port=$1 dir="$CLUSTER_DIR/$1"
  mkdir -p "$dir"
  rm -f "$dir/nodes.conf"
  redis-server --port "$port" --bind 127.0.0.1 --daemonize yes \
    --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" \
    --cluster-node-timeout "$CLUSTER_NODE_TIMEOUT_MS" \
    --cluster-replica-validity-factor 0 \
    --repl-diskless-sync-delay 0 \
    --dir "$dir" --save "" --appendonly no \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
}

cluster_up() {
  local port nodes=()
  for port in $(cluster_ports); do
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  rm -rf "$CLUSTER_DIR"
  for port in $(cluster_ports); do
    cluster_start_node "$port"
    nodes+=("127.0.0.1:$port")
  done
  for port in $(cluster_ports); do
    for _ in $(seq 1 50); do
      [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
      sleep 0.1
    done
  done
  cluster_log "creating a cluster of ${nodes[*]} (3 primaries, 3 replicas)"
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1 || {
    cat "$CLUSTER_DIR/create.log" >&2
    return 1
  }
  for _ in $(seq 1 100); do
    if redis-cli -p $((CLUSTER_BASE_PORT + 1)) cluster info 2>/dev/null | grep -q 'cluster_state:ok' &&
      [ "$(redis-cli -p $((CLUSTER_BASE_PORT + 1)) cluster info | sed -n 's/^cluster_slots_ok:\([0-9]*\).*/\1/p')" = 16384 ]; then
      # Replicas attached too: every primary has one.
      if [ "$(redis-cli -p $((CLUSTER_BASE_PORT + 1)) cluster nodes | grep -c slave)" = 3 ]; then
        break
      fi
    fi
    sleep 0.2
  done
  # Replicas hold a copy before anything relies on them: a failover right
  # after start must not lose what was written.
  for port in $(cluster_ports); do
    for _ in $(seq 1 100); do
      info=$(redis-cli -p "$port" info replication 2>/dev/null)
      if printf '%s' "$info" | grep -q 'role:master' || printf '%s' "$info" | grep -q 'master_link_status:up'; then
        break
      fi
      sleep 0.1
    done
  done
  export REDIS_CLUSTER_NODES
  REDIS_CLUSTER_NODES=$(printf 'redis://%s,' "${nodes[@]}"); REDIS_CLUSTER_NODES=${REDIS_CLUSTER_NODES%,}
  cluster_log "ready: $REDIS_CLUSTER_NODES"
}

cluster_down() {
  local port
  for port in $(cluster_ports); do
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  cluster_log "stopped"
}

# The port of the Nth primary (1..3) as the cluster sees it now.
cluster_primary_port() {
  redis-cli -p "${2:-$((CLUSTER_BASE_PORT + 1))}" cluster nodes 2>/dev/null |
    awk '$3 ~ /master/ && $3 !~ /fail/ { split($2, a, "[:@]"); print a[2] }' | sort -n | sed -n "${1}p"
}
