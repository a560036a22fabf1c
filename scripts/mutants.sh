#!/usr/bin/env bash
#? `make mutants`: cargo-mutants over the core modules (settlement,
#? reservation, throttle, codes, sessions). Each mutant is built and the
#? tests that guard it run against real PostgreSQL and Redis: the engine's
#? unit tests and the server's integration suite (`--test api`, the
#? concurrency suite included). A mutant that no test catches is a
#? "survivor": docs/development/mutation-testing.md lists them per module. Not part of
#? `make test`: it rebuilds once per mutant and takes hours on two cores.
#?
#?   MUTANTS_FILES  space-separated source files (default: the five modules)
#?   MUTANTS_TESTS  engine: only the engine's own tests guard the mutants
#?                  (its unit tests and the settlement suite,
#?                  server/engine/tests/settlement); minutes per module,
#?                  not hours. Default: engine and server.
#?   MUTANTS_ARGS   extra cargo-mutants arguments (e.g. --shard 0/4)
#?
#? `make mutants-settlement` is settlement/ and reservation/ against the
#? engine's tests: the two modules whose survivors must be zero.
#?
#? Then the SQL and Lua half (`server/harness/src/bin/mutate`): the
#? settlement's PL/pgSQL functions and the Redis scripts, each mutant run
#? against the engine's tests (`make mutants-sql-lua` runs only this half).
#?   MUTANTS_HALF   rust | sql-lua | all (default all)
#?   MUTANTS_ONLY   sql-lua: only the targets containing one of these
#?                  comma-separated words (e.g. auth_codes,fixed_window)
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
scripts/ensure-tools.sh --no-browser
. scripts/services.sh
services_up
trap services_down EXIT
use_test_database

half=${MUTANTS_HALF:-all}
out="$CARGO_TARGET_DIR/mutants"
mkdir -p "$out"
if [ "$half" != rust ]; then
  # A PostgreSQL of its own: the engine's tests name their databases after
  # the test, so another run of them on the same server (another checkout's
  # `make test`) would drop this run's databases and fake a kill.
  # (started in a subshell: services.sh's own private PostgreSQL, on a
  # fresh machine, keeps its variables and its stop.)
  mutants_pg_port=${MUTANTS_PG_PORT:-17310}
  if pg_reachable "postgres://postgres@127.0.0.1:$mutants_pg_port/postgres"; then
    echo "a PostgreSQL already listens on $mutants_pg_port: stop it (or set MUTANTS_PG_PORT)" >&2
    exit 1
  fi
  (
    DATA_DIR="$REPO_ROOT/.data/mutants"
    PRIVATE_PG_PORT=$mutants_pg_port
    rm -rf "$DATA_DIR"
    start_private_pg
    trap stop_private_pg EXIT
    # Its own report: $out/sql-lua.md; exit 1 on a survivor not explained,
    # a crash, or an explanation that explains nothing.
    DATABASE_URL="postgres://postgres@127.0.0.1:$PRIVATE_PG_PORT/postgres" \
      cargo run -q -p harness --bin mutate -- --out "$out" ${MUTANTS_ONLY:+--only "$MUTANTS_ONLY"}
  ) || sql_lua_status=$?
  [ "$half" = sql-lua ] && exit "${sql_lua_status:-0}"
fi

CARGO_MUTANTS_VERSION=27.1.0
if ! cargo mutants --version 2>/dev/null | grep -q "$CARGO_MUTANTS_VERSION"; then
  echo "[tools] installing cargo-mutants $CARGO_MUTANTS_VERSION (crates.io, once)"
  cargo install cargo-mutants --version "$CARGO_MUTANTS_VERSION" --locked
fi

# `settlement/*.rs` is expanded by the shell below: every file of the module.
files=${MUTANTS_FILES:-"server/engine/src/settlement/*.rs server/engine/src/reservation/mod.rs server/engine/src/throttle/mod.rs server/engine/src/codes.rs server/engine/src/sessions.rs"}
file_args=()
for f in $files; do file_args+=(--file "$f"); done
# The integration suite runs in parallel, one test per core.
if [ "${MUTANTS_TESTS:-}" = engine ]; then
  test_args=(--test-package engine)
else
  test_args=(--test-package engine --test-package server -- --features app/ssr)
fi
# shellcheck disable=SC2086 # MUTANTS_ARGS is a list of arguments
cargo mutants --package engine "${file_args[@]}" \
  --output "$out" ${MUTANTS_ARGS:-} "${test_args[@]}" || status=$?
echo "==> Rust survivors (also $out/mutants.out/missed.txt):"
cat "$out/mutants.out/missed.txt" 2>/dev/null || true
if [ -f "$out/sql-lua.md" ] && [ "$half" = all ]; then
  echo "==> SQL and Lua ($out/sql-lua.md):"
  cat "$out/sql-lua.md"
fi
exit "${status:-${sql_lua_status:-0}}"
