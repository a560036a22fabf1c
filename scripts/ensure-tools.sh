#!/usr/bin/env bash
#? Installs, idempotently, every tool the build and the tests need and that a
#? fresh Debian machine with rustup lacks. Nothing here downloads at build or
#? run time: this script is the one place that reaches package registries.
#?
#? Pins (why each: docs/development/toolchain.md):
#?   cargo-leptos 0.3.10 with --features no_downloads (0.3.11 needs rustc 1.96)
#?   wasm-bindgen-cli = the wasm-bindgen version in Cargo.lock
#?   wasm-opt from binaryen 132 via npm (Debian's binaryen 108 breaks hydration),
#?     in scripts/wasm-opt/ of its own
#?
#? --run installs only what `make run` needs (Rust tools, wasm-opt,
#? PostgreSQL and Redis): not chromium, the CJK font, Playwright or
#? schemathesis or moto, which only the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_LEPTOS_VERSION=0.3.10
log() { printf '\033[1;34m[tools]\033[0m %s\n' "$*"; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" = 0 ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

want_rust=1; want_browser=1; want_services=1; want_test_tools=1
for arg in "$@"; do
  case "$arg" in
    --run) want_browser=0; want_test_tools=0 ;;
    --no-browser) want_browser=0 ;;
    --no-services) want_services=0 ;;
    --no-rust) want_rust=0 ;;
  esac
done

if [ "$want_rust" = 1 ]; then
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    log "adding rust target wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  fi
  if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    log "installing cargo-leptos $CARGO_LEPTOS_VERSION (takes ~20 min once)"
    cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked --features no_downloads
  fi
  wb_version=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/[" ]/,"",$0); sub("version=","",$0); print; exit}' Cargo.lock 2>/dev/null || true)
  wb_version=${wb_version:-0.2.130}
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $wb_version"; then
    log "installing wasm-bindgen-cli $wb_version (takes ~6 min once)"
    # --locked fails for 0.2.130 (a pinned dependency left the index); see docs/development/toolchain.md.
    cargo install wasm-bindgen-cli --version "$wb_version" --force
  fi
fi

if [ "$want_browser" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  log "installing Debian chromium"
  apt_install chromium
fi
# A CJK font, so the Chinese pages' screenshots show characters, not boxes.
if [ "$want_browser" = 1 ] && ! fc-list 2>/dev/null | grep -qi "wenquanyi\|noto sans cjk"; then
  log "installing a CJK font (fonts-wqy-microhei)"
  apt_install fonts-wqy-microhei fontconfig
fi

if [ "$want_services" = 1 ]; then
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    log "installing PostgreSQL server binaries"
    apt_install postgresql
  fi
  command -v psql >/dev/null || apt_install postgresql-client
  command -v redis-server >/dev/null || { log "installing redis-server"; apt_install redis-server; }
fi

# npm packages from their lock files: binaryen's wasm-opt (release builds)
# always, the Playwright test runner only for the tests.
npm_ci() {
  local dir=$1
  command -v npm >/dev/null || apt_install nodejs npm
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    log "installing npm packages ($dir)"
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
}
npm_ci scripts/wasm-opt
if [ "$want_test_tools" = 1 ]; then
  npm_ci end2end
  # schemathesis (PyPI), in its own virtualenv outside the clone: fuzzes the
  # JSON API against its OpenAPI document in `make test`.
  SCHEMATHESIS_VERSION=4.32.5
  venv="$HOME/.cache/admitone/schemathesis"
  if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    log "installing schemathesis $SCHEMATHESIS_VERSION (PyPI, once)"
    command -v python3 >/dev/null || apt_install python3 python3-venv
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION"
  fi
  # moto's S3 server (PyPI), in a virtualenv of its own: the storage tests
  # start one per test (`harness::s3`) to test the S3 backend for real.
  MOTO_VERSION=5.2.1
  venv="$HOME/.cache/admitone/moto"
  if ! "$venv/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$MOTO_VERSION')" 2>/dev/null \
    || [ ! -x "$venv/bin/moto_server" ]; then
    log "installing moto[server] $MOTO_VERSION (PyPI, once)"
    command -v python3 >/dev/null || apt_install python3 python3-venv
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q "moto[server]==$MOTO_VERSION"
  fi
  # pg_auto_failover (Debian): the highly available PostgreSQL the failover
  # tests and `make faults` start on loopback (scripts/pg-ha.sh).
  scripts/pg-ha.sh install
  # systemd-analyze (Debian's systemd): the docs tests verify the units
  # server/deploy/ ships.
  command -v systemd-analyze >/dev/null || { log "installing systemd (systemd-analyze)"; apt_install systemd; }
fi
log "tools ready"
