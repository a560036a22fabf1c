#!/usr/bin/env bash
#? `make faults`: the fault-injection suite. Starts what it breaks (a
#? private PostgreSQL on its own port under .data/faults/, a 6-node Redis
#? Cluster, standalone Redis servers of its own), never a system instance,
#? then runs the `faults` driver (server/harness/src/bin/faults/main.rs) and prints its
#? table (also target/faults/latest.md and .json).
#?
#?   FAULTS_LEARNERS   learners per fault (default 300; `make test` uses 60)
#?   FAULTS_MS         how long each fault lasts (default 3000)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
scripts/ensure-tools.sh --no-browser
. scripts/services.sh
. scripts/redis-cluster.sh

# A PostgreSQL of our own: restarting it mid-load must not touch anyone
# else's server.
DATA_DIR="$REPO_ROOT/.data/faults"
PRIVATE_PG_PORT=${FAULTS_PG_PORT:-17300}
faults_down() {
  [ "$STARTED_PG" = 1 ] && stop_private_pg
  cluster_down
}
trap faults_down EXIT
if ! pg_reachable "postgres://postgres@127.0.0.1:$PRIVATE_PG_PORT/postgres"; then
  start_private_pg
fi
pg_bin=$(pg_bin_dir)
restart="$pg_bin/pg_ctl -D $DATA_DIR/postgres -m fast -w -t 60 restart"
if [ "$(id -u)" = 0 ]; then restart="runuser -u postgres -- $restart"; fi
cluster_up

echo "==> building the server and the fault driver"
cargo build -p server -p harness --bin server --bin faults
bin="$CARGO_TARGET_DIR/debug"
out="$CARGO_TARGET_DIR/faults"
mkdir -p "$out"
"$bin/faults" \
  --server-bin "$bin/server" \
  --pg-server "postgres://postgres@127.0.0.1:$PRIVATE_PG_PORT" \
  --pg-restart "$restart >/dev/null" \
  --cluster-nodes "$REDIS_CLUSTER_NODES" \
  --cluster-dir "$CLUSTER_DIR" \
  --learners "${FAULTS_LEARNERS:-300}" \
  --fault-ms "${FAULTS_MS:-3000}" \
  --repo "$REPO_ROOT" \
  --out "$out" "$@"
