#!/usr/bin/env bash
#? Fuzzes the JSON API against its own OpenAPI document with schemathesis
#? (installed by scripts/ensure-tools.sh): a throwaway database with the
#? demo seed, the built server, an API token of the demo admin, then every
#? operation with generated input. Fails on any 5xx or on a response that
#? does not match the document.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
: "${DATABASE_URL:?scripts/test.sh exports DATABASE_URL}"
: "${REDIS_URL:?scripts/test.sh exports REDIS_URL}"
SERVER_BIN=${SERVER_BIN:-"${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/server"}
SCHEMATHESIS=${SCHEMATHESIS:-"$HOME/.cache/admitone/schemathesis/bin/schemathesis"}
PORT=${SCHEMATHESIS_PORT:-3200}
MAX_EXAMPLES=${SCHEMATHESIS_MAX_EXAMPLES:-25}

server_url=${DATABASE_URL%/*}
db="admitone_fuzz_$(date +%s)_$$"
work=$(mktemp -d)
cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  psql -q -d "$server_url/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli -u "$REDIS_URL" --scan --pattern "fuzz:$db:*" 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export DATABASE_URL="$server_url/$db"
export APP_SERVER__PORT=$PORT
export APP_REDIS__KEY_PREFIX="fuzz:$db"
export APP_STORAGE__ROOT="$work/storage"
export RUST_LOG=${RUST_LOG:-warn}
# The fuzzer calls far faster than any integration: its token is not throttled.
export APP_THROTTLE__API_TOKEN_PER_MINUTE=100000000
psql -q -d "$server_url/postgres" -c "CREATE DATABASE $db"
"$SERVER_BIN" migrate >/dev/null
"$SERVER_BIN" dev seed-demo >/dev/null
"$SERVER_BIN" serve > "$work/server.log" 2>&1 &
pid=$!
base="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -fsS "$base/readyz" >/dev/null 2>&1 && break; sleep 0.2; done

jar="$work/cookies"
curl -fsS -c "$jar" -H 'content-type: application/json' \
  -d '{"email":"admin@demo.admitone.test","password":"demo-admin-password"}' "$base/api/v1/auth/login" >/dev/null
tenant=$(psql -qtAX -d "$DATABASE_URL" -c "SELECT id FROM tenants WHERE slug = 'demo'")
token=$(curl -fsS -b "$jar" --data-urlencode "tenant_id=$tenant" --data-urlencode "name=schemathesis" \
  --data-urlencode "read=on" --data-urlencode "write=on" --data-urlencode "integrations=on" \
  "$base/api/admin/tokens/create" | tr -d '"')

# Two schemathesis processes side by side, each on half of the operations,
# rather than one with two worker threads: under threads, CPython 3.11's
# `ast.parse` (which hypothesis calls to describe its filters) fails now
# and then with "AST constructor recursion depth mismatch", an error of the
# tool, not of the API. Processes share nothing, so the same parallel run
# has no such failures.
fuzz() {
  "$SCHEMATHESIS" run "$base/api/v1/openapi.json" \
    --header "Authorization: Bearer $token" \
    --checks not_a_server_error,response_schema_conformance,content_type_conformance \
    --max-examples "$MAX_EXAMPLES" \
    --workers 1 \
    --no-color \
    --warnings off "$@"
}
half='^/api/v1/(shares|batches|codes)'
status=0 status_a=0 status_b=0
fuzz --include-path-regex "$half" > "$work/fuzz-a.log" 2>&1 & pid_a=$!
fuzz --exclude-path-regex "$half" > "$work/fuzz-b.log" 2>&1 & pid_b=$!
wait "$pid_a" || status_a=$?
wait "$pid_b" || status_b=$?
echo "=== shares, batches, codes ==="; cat "$work/fuzz-a.log"
echo "=== every other operation ==="; cat "$work/fuzz-b.log"
[ "$status_a" = 0 ] || status=$status_a
[ "$status_b" = 0 ] || status=$status_b
if [ "$status" != 0 ]; then
  echo "--- server log (last 80 lines) ---"
  tail -80 "$work/server.log"
fi
exit "$status"
