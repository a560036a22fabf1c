#!/usr/bin/env bash
#? `make run`: install what is missing, start or reuse PostgreSQL and Redis,
#? build, migrate, seed the demo tenant, serve on http://127.0.0.1:3000.
#? Ctrl-C stops the server and whatever this script started.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
# Only what running needs: no browser, Playwright or schemathesis.
scripts/ensure-tools.sh --run
. scripts/services.sh
services_up
trap services_down EXIT

profile_flag=""; profile_dir=debug
if [ "${RELEASE:-0}" = 1 ]; then profile_flag="--release"; profile_dir=release; fi
cargo leptos build --split $profile_flag
server="$CARGO_TARGET_DIR/$profile_dir/server"
# A release site is served compressed (a debug wasm is too big to be worth it).
if [ "$profile_dir" = release ]; then "$server" precompress >/dev/null; fi
"$server" migrate
echo
"$server" dev seed-demo
echo
echo "AdmitOne is starting on http://127.0.0.1:${APP_SERVER__PORT:-3000}  (Ctrl-C to stop)"
echo
# Not exec: the trap above must run after the server stops.
"$server" serve &
server_pid=$!
trap 'kill -INT $server_pid 2>/dev/null || true' INT TERM
wait "$server_pid" || true
wait "$server_pid" 2>/dev/null || true
