# shellcheck shell=bash
#? PostgreSQL and Redis for `make run` / `make test`, sourced by scripts/run.sh
#? and scripts/test.sh.
#?
#? Where DATABASE_URL / REDIS_URL (defaults 127.0.0.1:5432 / :6379) answer,
#? they are used as they are. Otherwise a private instance is started from the
#? installed binaries, with its data under .data/ (git-ignored) on its own
#? port, never touching a system instance's data; `services_down` stops only
#? what `services_up` started.

REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
DATA_DIR="$REPO_ROOT/.data"
PRIVATE_PG_PORT=${PRIVATE_PG_PORT:-54329}
PRIVATE_REDIS_PORT=${PRIVATE_REDIS_PORT:-63799}
STARTED_PG=0
STARTED_REDIS=0

svc_log() { printf '\033[1;32m[services]\033[0m %s\n' "$*"; }

# The server part of a PostgreSQL URL (without the database), and its database.
pg_server_of() { printf '%s' "${1%/*}"; }
pg_database_of() { local db=${1##*/}; printf '%s' "${db%%\?*}"; }

pg_reachable() { pg_isready -q -d "$1" -t 2 >/dev/null 2>&1; }
redis_reachable() { [ "$(redis-cli -u "$1" ping 2>/dev/null)" = "PONG" ]; }

pg_bin_dir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && printf '%s' "$dir"
}

# Runs a command as the unprivileged postgres user when we are root
# (PostgreSQL refuses to run as root).
as_pg_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_private_pg() {
  local bin; bin=$(pg_bin_dir) || { echo "PostgreSQL server binaries not found" >&2; return 1; }
  local pgdata="$DATA_DIR/postgres"
  mkdir -p "$DATA_DIR"
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/false postgres
  fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    svc_log "initialising a private PostgreSQL in $pgdata"
    mkdir -p "$pgdata"
    [ "$(id -u)" = 0 ] && chown postgres: "$pgdata"
    chmod 700 "$pgdata"
    as_pg_user "$bin/initdb" -D "$pgdata" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  mkdir -p "$DATA_DIR/run"
  [ "$(id -u)" = 0 ] && chown postgres: "$DATA_DIR/run"
  svc_log "starting a private PostgreSQL on 127.0.0.1:$PRIVATE_PG_PORT"
  as_pg_user "$bin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 30 \
    -o "-p $PRIVATE_PG_PORT -c listen_addresses=127.0.0.1 -k $DATA_DIR/run" start >/dev/null
  STARTED_PG=1
}

stop_private_pg() {
  local bin; bin=$(pg_bin_dir) || return 0
  svc_log "stopping the private PostgreSQL"
  as_pg_user "$bin/pg_ctl" -D "$DATA_DIR/postgres" -m fast -w stop >/dev/null || true
}

start_private_redis() {
  mkdir -p "$DATA_DIR/redis"
  svc_log "starting a private Redis on 127.0.0.1:$PRIVATE_REDIS_PORT"
  redis-server --port "$PRIVATE_REDIS_PORT" --bind 127.0.0.1 --daemonize yes \
    --dir "$DATA_DIR/redis" --save "" --appendonly no \
    --pidfile "$DATA_DIR/redis/redis.pid" --logfile "$DATA_DIR/redis/redis.log"
  local i
  for i in $(seq 1 50); do
    redis_reachable "redis://127.0.0.1:$PRIVATE_REDIS_PORT" && break
    sleep 0.1
  done
  STARTED_REDIS=1
}

stop_private_redis() {
  svc_log "stopping the private Redis"
  redis-cli -p "$PRIVATE_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
}

# Exports DATABASE_URL and REDIS_URL pointing at servers that answer.
services_up() {
  export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/admitone}
  export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
  if pg_reachable "$DATABASE_URL"; then
    svc_log "using PostgreSQL at $(pg_server_of "$DATABASE_URL" | sed 's#//[^@]*@#//#')"
  else
    local private="postgres://postgres@127.0.0.1:$PRIVATE_PG_PORT/$(pg_database_of "$DATABASE_URL")"
    if ! pg_reachable "$private"; then
      start_private_pg
    fi
    export DATABASE_URL=$private
  fi
  if redis_reachable "$REDIS_URL"; then
    svc_log "using Redis at ${REDIS_URL#*@}"
  else
    local private="redis://127.0.0.1:$PRIVATE_REDIS_PORT"
    redis_reachable "$private" || start_private_redis
    export REDIS_URL=$private
  fi
}

# Stops what services_up started (and nothing else).
services_down() {
  [ "$STARTED_PG" = 1 ] && stop_private_pg
  [ "$STARTED_REDIS" = 1 ] && stop_private_redis
  STARTED_PG=0
  STARTED_REDIS=0
  return 0
}

# Creates the database of a PostgreSQL URL if it does not exist.
ensure_database() {
  local url=$1 server db
  server=$(pg_server_of "$url"); db=$(pg_database_of "$url")
  if [ "$(psql -d "$server/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
    psql -q -d "$server/postgres" -c "CREATE DATABASE \"$db\""
  fi
}

# Points DATABASE_URL at the database `#[sqlx::test]` creates one database
# per test through (same server), creating it if needed.
use_test_database() {
  export DATABASE_URL="$(pg_server_of "$DATABASE_URL")/admitone_test"
  ensure_database "$DATABASE_URL"
}
