# shellcheck shell=bash
#? Environment shared by every build and test step, sourced by the scripts.
REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# Queries are checked against the committed .sqlx/ data, never a live
# database at build time (`make sqlx-prepare` refreshes it).
export SQLX_OFFLINE=true
# binaryen's wasm-opt 132 (npm) before any system one: Debian's 108 silently
# breaks release builds.
export PATH="$REPO_ROOT/scripts/wasm-opt/node_modules/.bin:$REPO_ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$REPO_ROOT/target}
# cargo-leptos writes the site (wasm, js, css) to target/site in the repo.
export APP_SERVER__SITE_ROOT=${APP_SERVER__SITE_ROOT:-$REPO_ROOT/target/site}
