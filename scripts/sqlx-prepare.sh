#!/usr/bin/env bash
#? Regenerates .sqlx/ (the offline query data that lets the `query!` macros
#? compile without a database) from a scratch database migrated from
#? migrations/. Run it after changing a query or a migration: `make sqlx-prepare`.
#? Builds use SQLX_OFFLINE=true, so stale data fails the build (and CI).
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO_ROOT"
. scripts/env.sh
# shellcheck source=scripts/services.sh
. scripts/services.sh
services_up
trap services_down EXIT

server=$(pg_server_of "$DATABASE_URL")
scratch="admitone_sqlx_prepare"
psql -q -d "$server/postgres" -c "DROP DATABASE IF EXISTS $scratch WITH (FORCE)" -c "CREATE DATABASE $scratch"
for f in migrations/*.sql; do
  psql -q -v ON_ERROR_STOP=1 -d "$server/$scratch" -f "$f" >/dev/null
done
rm -rf .sqlx && mkdir -p .sqlx
# Force the macros to expand again: touch every crate that uses them.
find server app -name '*.rs' -exec touch {} +
SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$REPO_ROOT/.sqlx" DATABASE_URL="$server/$scratch" \
  cargo check --workspace --all-targets --features app/ssr --exclude frontend --quiet
psql -q -d "$server/postgres" -c "DROP DATABASE $scratch WITH (FORCE)"
echo "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
