#!/usr/bin/env bash
#? Started by Playwright (end2end/playwright.config.ts `webServer`): runs the
#? built server against a throwaway database with the demo seed, on E2E_PORT,
#? with its own Redis key prefix, sending its mail to a real SMTP server of
#? its own (the harness's `smtp-sink`, whose HTTP side the specs read mail
#? from); drops the database when Playwright stops it.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
: "${DATABASE_URL:?scripts/test.sh exports DATABASE_URL}"
: "${REDIS_URL:?scripts/test.sh exports REDIS_URL}"
SERVER_BIN=${SERVER_BIN:-"${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/server"}
SINK_BIN=${SINK_BIN:-"${CARGO_TARGET_DIR:-$REPO_ROOT/target}/debug/smtp-sink"}

server_url=${DATABASE_URL%/*}
db="admitone_e2e_$(date +%s)_$$"
export DATABASE_URL="$server_url/$db"
export APP_SERVER__PORT=${E2E_PORT:-3100}
# Mailed links point at this server.
export APP_SERVER__PUBLIC_URL="http://127.0.0.1:$APP_SERVER__PORT"
smtp_port=${E2E_SMTP_PORT:-$((APP_SERVER__PORT + 25))}
mail_port=${E2E_MAIL_PORT:-$((APP_SERVER__PORT + 26))}
export APP_MAIL__SMTP_URL="smtp://127.0.0.1:$smtp_port"
export APP_MAIL__FROM="AdmitOne E2E <no-reply@admitone.test>"
export APP_MAIL__POLL_INTERVAL_MS=100
export APP_REDIS__KEY_PREFIX="e2e:$db"
export RUST_LOG=${RUST_LOG:-warn,server=info}
# Every browser of the suite comes from 127.0.0.1: per-IP limits would make
# one spec fail because of the others. Per-account and per-email limits
# (what the throttling journeys test) keep their defaults.
export APP_THROTTLE__REGISTER_PER_IP=${APP_THROTTLE__REGISTER_PER_IP:-10000}
export APP_THROTTLE__CODE_PER_IP=${APP_THROTTLE__CODE_PER_IP:-10000}
export APP_THROTTLE__SIGN_IN_PER_IP=${APP_THROTTLE__SIGN_IN_PER_IP:-10000}
export APP_THROTTLE__MAIL_PER_IP=${APP_THROTTLE__MAIL_PER_IP:-10000}

# Tests that need operator commands (e.g. disabling an account) read how to
# reach this server's database here.
info="$REPO_ROOT/end2end/.e2e-server.json"
printf '{"databaseUrl":"%s","serverBin":"%s","mailUrl":"http://127.0.0.1:%s"}\n' \
  "$DATABASE_URL" "$SERVER_BIN" "$mail_port" > "$info"

cleanup() {
  rm -f "$info"
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "${sink:-}" ] && kill "$sink" 2>/dev/null && wait "$sink" 2>/dev/null
  psql -q -d "$server_url/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli -u "$REDIS_URL" --scan --pattern "e2e:$db:*" 2>/dev/null | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 0' TERM INT

"$SINK_BIN" --smtp-port "$smtp_port" --http-port "$mail_port" &
sink=$!
"$SERVER_BIN" migrate
"$SERVER_BIN" dev seed-demo >/dev/null
"$SERVER_BIN" serve &
pid=$!
wait "$pid"
