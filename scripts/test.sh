#!/usr/bin/env bash
#? `make test`: everything, in the order a failure is cheapest to find:
#? formatting, clippy (server and wasm builds), unit and integration tests on
#? real PostgreSQL and Redis (then the Redis-facing suites again on a
#? 6-node Redis Cluster, then the fault-injection suite at a smaller size,
#? then a short soak of the real server),
#? Playwright in Debian's chromium, then schemathesis against
#? /api/v1/openapi.json.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
scripts/ensure-tools.sh
. scripts/services.sh
services_up
trap services_down EXIT
use_test_database

step() { printf '\n\033[1;35m==> %s\033[0m\n' "$*"; }

step "rustfmt"
cargo fmt --all --check

step "clippy (server, ssr)"
cargo clippy --workspace --exclude frontend --all-targets --features app/ssr -- -D warnings
step "clippy (frontend, hydrate, wasm32)"
cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings
# The engine as the mutation runner builds it (its `mutation` feature).
step "clippy (engine, mutation feature)"
cargo clippy -p engine --features mutation --all-targets -- -D warnings

step "unit and integration tests (PostgreSQL + Redis)"
# In parallel (one test per core): each test server runs on its own
# multi-thread runtime, as production does, with its own database and Redis
# key prefix.
cargo test --workspace --exclude frontend --features app/ssr

step "OpenTelemetry export (the optional otlp feature)"
cargo test -p server --features app/ssr,otlp --test otlp

step "every integration test again, on a 6-node Redis Cluster (3 primaries, 3 replicas)"
. scripts/redis-cluster.sh
trap 'cluster_down; services_down' EXIT
cluster_up
# The whole API suite (the reconciler's reservation audit included: it
# scans every primary) and the engine's settlement suite (reserve.lua,
# release.lua, fixed_window.lua), each test with its own key prefix, so
# that no path to Redis is proven on a standalone server only. Tests that
# start a Redis of their own keep it (support::app::test_settings).
REDIS_CLUSTER_NODES="$REDIS_CLUSTER_NODES" \
  cargo test -p server --features app/ssr --test api
REDIS_CLUSTER_NODES="$REDIS_CLUSTER_NODES" \
  cargo test -p engine --test settlement
cluster_down

step "fault injection, smaller form (make faults runs it at full size)"
FAULTS_LEARNERS=${FAULTS_LEARNERS:-60} scripts/faults.sh

step "soak: a real server, 64 parallel clients over every page kind (make soak runs it longer)"
SOAK_SECS=${SOAK_SECS:-20} scripts/soak.sh

step "build the site (cargo leptos build) and the journeys' SMTP server"
cargo leptos build --split
cargo build -p harness --bin smtp-sink

step "end-to-end tests (Playwright, chromium)"
cd end2end
npx playwright test

step "API fuzzing against its OpenAPI document (schemathesis)"
cd "$REPO_ROOT"
scripts/schemathesis.sh

step "release build hydrates, and so does a deploy over it (cargo leptos build --release; shell and deploy specs)"
cd "$REPO_ROOT"
release_server="$CARGO_TARGET_DIR/release/server"
deploy=$(mktemp -d)
trap 'rm -rf "$deploy"; cluster_down; services_down' EXIT
ADMITONE_BUILD=deploy-a cargo leptos build --release --split
# Served compressed, as in production: hydrating from the .br copy is part of the check.
"$release_server" precompress
cd end2end
SERVER_BIN="$release_server" npx playwright test tests/shell.spec.ts
SERVER_BIN="$release_server" DEPLOY_PHASE=a DEPLOY_STATE="$deploy" npx playwright test tests/deploy.spec.ts
# Build B: a changed stylesheet and a wasm compiled with another mark; the
# browser profile of phase a still holds build A's files.
cd "$REPO_ROOT"
{ cat style/main.css; printf '\n:root { --deploy-build: "b"; }\n'; } > "$deploy/main.css"
ADMITONE_BUILD=deploy-b LEPTOS_STYLE_FILE="$deploy/main.css" cargo leptos build --release --split
"$release_server" precompress
cd end2end
SERVER_BIN="$release_server" DEPLOY_PHASE=b DEPLOY_STATE="$deploy" npx playwright test tests/deploy.spec.ts
