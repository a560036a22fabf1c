#!/usr/bin/env bash
#? A highly available PostgreSQL on loopback, from pg_auto_failover
#? (Debian's postgresql-<major>-auto-failover and pg-auto-failover-cli):
#? a monitor and two data nodes with synchronous replication, for the
#? failover tests and `make faults`. Never used by `make run`.
#?
#?   scripts/pg-ha.sh install          install the packages (once; root or sudo)
#?   scripts/pg-ha.sh up DIR PORT      monitor on PORT, nodes on PORT+1 and PORT+2;
#?                                     waits for primary + secondary, prints the nodes
#?   scripts/pg-ha.sh kill DIR NODE    kill -9 NODE's whole process group (pg_autoctl
#?                                     and its PostgreSQL: what a machine failure kills)
#?   scripts/pg-ha.sh freeze DIR NODE  SIGSTOP NODE's process group (a frozen machine,
#?                                     or one cut off without a word: nothing answers)
#?   scripts/pg-ha.sh thaw DIR NODE    SIGCONT it (the machine comes back)
#?   scripts/pg-ha.sh start DIR NODE   start NODE again (it rejoins as a standby)
#?   scripts/pg-ha.sh primary DIR      print the primary's host:port, per the monitor
#?   scripts/pg-ha.sh wait DIR STATES  wait until the nodes report STATES
#?                                     (e.g. "primary secondary", in node order)
#?   scripts/pg-ha.sh down DIR         stop every process group the formation started
#?
#? Each `pg_autoctl run` starts in a process group of its own (setsid), its
#? id kept in DIR/NAME.pgid. PostgreSQL refuses to run as root: as root,
#? everything runs as `postgres`. The monitor and the nodes are created,
#? with their timers, by the production setup script
#? (server/deploy/ha/pg-ha-setup.sh), on loopback without TLS.
set -euo pipefail

SETUP="$(cd "$(dirname "$0")/.." && pwd)/server/deploy/ha/pg-ha-setup.sh"

log() { printf '\033[1;35m[pg-ha]\033[0m %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

pg_major() {
  local bin
  for bin in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$bin/initdb" ] && { basename "$(dirname "$bin")"; return; }
  done
  return 1
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install() {
  if command -v pg_autoctl >/dev/null 2>&1; then return; fi
  local major; major=$(pg_major) || die "no PostgreSQL server binaries: run scripts/ensure-tools.sh first"
  log "installing pg_auto_failover for PostgreSQL $major (Debian packages)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    "postgresql-$major-auto-failover" pg-auto-failover-cli >/dev/null
}

# Runs a command as the user PostgreSQL runs as, with pg_autoctl's
# XDG directories inside the formation's own directory.
as_pg() {
  local dir=$1; shift
  local env=(env "PATH=/usr/lib/postgresql/$(pg_major)/bin:$PATH"
    "XDG_RUNTIME_DIR=$dir/xdg/run" "XDG_CONFIG_HOME=$dir/xdg/config"
    "XDG_DATA_HOME=$dir/xdg/data" "PGCONNECT_TIMEOUT=2")
  if [ "$(id -u)" = 0 ]; then
    (cd "$dir" && runuser -u postgres -- "${env[@]}" "$@")
  else
    (cd "$dir" && "${env[@]}" "$@")
  fi
}

# Whether PID is a process that still runs (a zombie does not: it is dead
# and only waits for PID 1 to reap it, which here can take seconds).
is_live() {
  [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

# Removes NAME's pid files whose process is dead. pg_autoctl and the
# postmaster each refuse to start while their pid file names a process
# that `kill -0` finds, and a killed one that is not yet reaped is still
# found: a node killed a moment ago would not start again.
clear_stale_pids() {
  local dir=$1 name=$2 file pid
  for file in "$dir/xdg/run/pg_autoctl$dir/$name/"*.pid "$dir/$name/postmaster.pid"; do
    [ -s "$file" ] || continue
    pid=$(head -n 1 "$file")
    if [ -n "$pid" ] && ! is_live "$pid"; then
      rm -f "$file"
    fi
  done
}

# Starts NAME's `pg_autoctl run` in a process group of its own.
run_node() {
  local dir=$1 name=$2
  clear_stale_pids "$dir" "$name"
  as_pg "$dir" setsid --fork sh -c 'echo $$ > "$1/$2.pgid"; exec pg_autoctl run --pgdata "$1/$2" >> "$1/$2.log" 2>&1' \
    sh "$dir" "$name"
  local tries=0
  until [ -s "$dir/$name.pgid" ]; do
    tries=$((tries + 1)); [ "$tries" -lt 100 ] || die "$name did not start"
    sleep 0.05
  done
}

monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$(cat "$1/monitor.port")/pg_auto_failover?sslmode=disable"; }

monitor_sql() {
  psql -X -q -At "postgres://postgres@127.0.0.1:$(cat "$1/monitor.port")/pg_auto_failover?sslmode=disable" -c "$2"
}

states() { monitor_sql "$1" "SELECT string_agg(reportedstate::text, ' ' ORDER BY nodeid) FROM pgautofailover.node" 2>/dev/null || true; }

wait_states() {
  local dir=$1 want=$2 timeout=${3:-90} waited=0 now=""
  while :; do
    now=$(states "$dir")
    [ "$now" = "$want" ] && return 0
    waited=$((waited + 1))
    [ "$waited" -le $((timeout * 5)) ] || die "nodes report '$now', not '$want', after ${timeout}s"
    sleep 0.2
  done
}

up() {
  local dir=$1 port=$2
  command -v pg_autoctl >/dev/null 2>&1 || die "pg_autoctl is missing: scripts/pg-ha.sh install"
  mkdir -p "$dir/xdg/run" "$dir/xdg/config" "$dir/xdg/data"
  chmod 700 "$dir/xdg/run"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
    chown -R postgres: "$dir"
  fi
  echo "$port" > "$dir/monitor.port"
  # A copy the `postgres` user can read, wherever the checkout is.
  rm -f "$dir/pg-ha-setup.sh"
  if [ "$(id -u)" = 0 ]; then
    command install -o postgres -g postgres -m 0555 "$SETUP" "$dir/pg-ha-setup.sh"
  else
    command install -m 0555 "$SETUP" "$dir/pg-ha-setup.sh"
  fi
  local setup="$dir/pg-ha-setup.sh"
  # A failure says why: pg_autoctl's own words are in create.log.
  trap 'log "formation failed; the end of $dir/create.log:"; tail -n 20 "$dir/create.log" >&2' ERR
  log "monitor on 127.0.0.1:$port"
  as_pg "$dir" "$setup" monitor "$dir/monitor" "$port" 127.0.0.1 \
    --listen 127.0.0.1 --auth trust --no-ssl >> "$dir/create.log" 2>&1
  run_node "$dir" monitor
  local tries=0
  until monitor_sql "$dir" "SELECT 1" >/dev/null 2>&1; do
    tries=$((tries + 1)); [ "$tries" -lt 300 ] || die "the monitor did not answer"
    sleep 0.1
  done
  as_pg "$dir" "$setup" timers \
    "postgres://postgres@127.0.0.1:$port/pg_auto_failover?sslmode=disable" >> "$dir/create.log" 2>&1
  local n want=""
  for n in 1 2; do
    log "node$n on 127.0.0.1:$((port + n))"
    as_pg "$dir" "$setup" node "$dir/node$n" "$((port + n))" 127.0.0.1 "node$n" \
      "$(monitor_url "$dir")" --listen 127.0.0.1 --auth trust --no-ssl >> "$dir/create.log" 2>&1
    run_node "$dir" "node$n"
    if [ "$n" = 1 ]; then want="single"; else want="primary secondary"; fi
    wait_states "$dir" "$want"
  done
  echo "127.0.0.1:$((port + 1)) 127.0.0.1:$((port + 2))"
}

kill_node() {
  local dir=$1 name=$2 pid tries=0
  [ -s "$dir/$name.pgid" ] || die "no process group recorded for $name"
  local pids
  pids=$(node_tree "$(cat "$dir/$name.pgid")")
  kill -9 -- "-$(cat "$dir/$name.pgid")" 2>/dev/null || true
  # And any of its tree in a session of its own; then until none runs.
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in $pids; do
    while is_live "$pid"; do
      tries=$((tries + 1)); [ "$tries" -lt 200 ] || die "$name's process $pid outlived SIGKILL"
      sleep 0.05
    done
  done
  rm -f "$dir/$name.pgid"
}

# The pids of NAME's whole process tree: its process group and every
# descendant (PostgreSQL's children each run in a session of their own).
node_tree() {
  ps -eo pid=,ppid=,pgid= | awk -v g="$1" '
    { parent[$1] = $2; if ($3 == g) tree[$1] = 1 }
    END {
      do {
        grown = 0
        for (p in parent) if (!(p in tree) && (parent[p] in tree)) { tree[p] = 1; grown = 1 }
      } while (grown)
      for (p in tree) print p
    }'
}

# SIGSTOP or SIGCONT NAME's whole process tree, parents first when
# stopping (a stopped parent starts no new child), until no process of it
# is left unsignalled.
signal_node() {
  local dir=$1 name=$2 signal=$3 pid done="" more=1
  [ -s "$dir/$name.pgid" ] || die "no process group recorded for $name"
  while [ "$more" = 1 ]; do
    more=0
    for pid in $(node_tree "$(cat "$dir/$name.pgid")"); do
      case " $done " in *" $pid "*) continue ;; esac
      kill "-$signal" "$pid" 2>/dev/null || true
      done="$done $pid"; more=1
    done
  done
}

primary() {
  monitor_sql "$1" "SELECT nodehost || ':' || nodeport FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary', 'single') AND goalstate IN ('primary', 'wait_primary', 'single')"
}

down() {
  local dir=$1 f pgid
  for f in "$dir"/node*.pgid "$dir"/monitor.pgid; do
    [ -s "$f" ] || continue
    pgid=$(cat "$f")
    kill -TERM -- "-$pgid" 2>/dev/null || true
    kill -CONT -- "-$pgid" 2>/dev/null || true
  done
  sleep 2
  for f in "$dir"/node*.pgid "$dir"/monitor.pgid; do
    [ -s "$f" ] || continue
    kill -9 -- "-$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

command=${1:-}; shift || true
# Every path absolute: the commands run from inside the formation's directory.
if [ $# -ge 1 ]; then set -- "$(realpath -m "$1")" "${@:2}"; fi
case "$command" in
  install) install ;;
  up) up "$1" "$2" ;;
  kill) kill_node "$1" "$2" ;;
  freeze) signal_node "$1" "$2" STOP ;;
  thaw) signal_node "$1" "$2" CONT ;;
  start) run_node "$1" "$2" ;;
  primary) primary "$1" ;;
  wait) wait_states "$1" "$2" "${3:-90}" ;;
  down) down "$1" ;;
  *) sed -n 's/^#? \{0,1\}//p' "$0"; exit 2 ;;
esac
