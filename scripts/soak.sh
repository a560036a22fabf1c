#!/usr/bin/env bash
#? `make soak`: the real server binary under SOAK_CLIENTS (64) parallel
#? clients for SOAK_SECS (60) seconds over every page kind: signed out,
#? learner, admin, in English and Chinese (server/harness/src/bin/soak.rs). Fails
#? on any unanswered request or any 5xx. Uses a fresh database of its own
#? (admitone_soak) and a fresh Redis key prefix, removed afterwards.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
scripts/ensure-tools.sh --no-browser
. scripts/services.sh
services_up

PORT=${SOAK_PORT:-3300}
server_url=$(pg_server_of "$DATABASE_URL")
db=admitone_soak
prefix="soak:$(cat /proc/sys/kernel/random/uuid)"
export DATABASE_URL="$server_url/$db"
work=$(mktemp -d)

cleanup() {
  [ -n "${server_pid:-}" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  redis-cli -u "$REDIS_URL" --scan --pattern "$prefix:*" | xargs -r -n 500 redis-cli -u "$REDIS_URL" del >/dev/null || true
  psql -q -d "$server_url/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
  services_down
}
trap cleanup EXIT

echo "==> building the server and the soak driver"
cargo build -p server -p harness --bin server --bin soak
bin="$CARGO_TARGET_DIR/debug"

psql -q -d "$server_url/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
"$bin/server" migrate >/dev/null
printf 'soak admin password\n' > "$work/admin-password"
tenant=$("$bin/server" admin create-tenant --slug soak --name Soak \
  --admin-email admin@soak.example --admin-password-file "$work/admin-password")

echo "==> server on :$PORT"
# A debug build under 64 clients on two cores queues its own work longer
# than production's 500 ms Redis timeout, which then answers 503 (as it
# should for a slow Redis). The soak looks for hangs and errors, not
# latency (`make bench` measures that), so Redis gets the tests' 5 s.
APP_REDIS__RESPONSE_TIMEOUT_MS=${SOAK_REDIS_TIMEOUT_MS:-5000} \
APP_SERVER__PORT=$PORT APP_REDIS__KEY_PREFIX=$prefix APP_STORAGE__ROOT="$work/storage" \
APP_SERVER__ENVIRONMENT=development \
APP_THROTTLE__SIGN_IN_PER_EMAIL=1000000 APP_THROTTLE__SIGN_IN_PER_IP=1000000 \
APP_THROTTLE__CODE_PER_ACCOUNT=1000000 APP_THROTTLE__CODE_PER_IP=1000000 APP_THROTTLE__CODE_PER_SHARE=1000000 \
RUST_LOG=warn "$bin/server" serve > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done

echo "==> ${SOAK_CLIENTS:-64} clients for ${SOAK_SECS:-60} s"
status=0
"$bin/soak" --base-url "http://127.0.0.1:$PORT" --admin-email admin@soak.example \
  --admin-password "soak admin password" --tenant-id "$tenant" \
  --clients "${SOAK_CLIENTS:-64}" --secs "${SOAK_SECS:-60}" || status=$?
if [ "$status" != 0 ]; then
  echo "==> soak failed; the server's log (last 50 lines):"
  tail -n 50 "$work/server.log"
fi
exit "$status"
