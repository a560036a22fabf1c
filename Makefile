# AdmitOne. The two commands that matter: `make run` and `make test`.
# Each target is a thin wrapper over a script in scripts/ (read them).
SHELL := /bin/bash
.DEFAULT_GOAL := help
.PHONY: help run run-release test tools check lint fmt unit e2e fuzz stress faults soak mutants mutants-settlement mutants-sql-lua bench sqlx-prepare clean-data

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

run: ## Build, start or reuse PostgreSQL + Redis, migrate, seed the demo, serve :3000
	@scripts/run.sh

run-release: ## Same as run, with a release build
	@RELEASE=1 scripts/run.sh

test: ## Everything: fmt, clippy, unit, integration (PG + Redis), Playwright
	@scripts/test.sh

tools: ## Install missing tools only (cargo-leptos, wasm-bindgen, wasm-opt, chromium, npm and PyPI test tools)
	@scripts/ensure-tools.sh

check: ## Fast compile check of server and wasm builds
	@. scripts/env.sh && cargo check --workspace --exclude frontend --all-targets --features app/ssr && cargo check -p frontend --target wasm32-unknown-unknown

fmt: ## Format the code
	@cargo fmt --all

unit: ## Unit + integration tests only (needs PostgreSQL and Redis; see scripts/services.sh)
	@. scripts/env.sh && . scripts/services.sh && services_up && trap services_down EXIT && use_test_database && cargo test --workspace --exclude frontend --features app/ssr $(ARGS)

e2e: ## Build the site and run Playwright only
	@. scripts/env.sh && . scripts/services.sh && services_up && trap services_down EXIT && cargo leptos build --split && cargo build -p harness --bin smtp-sink && cd end2end && npx playwright test $(ARGS)

fuzz: ## Fuzz /api/v1 against its OpenAPI document (schemathesis; SCHEMATHESIS_MAX_EXAMPLES=25)
	@. scripts/env.sh && . scripts/services.sh && services_up && trap services_down EXIT && cargo build -p server --features app/ssr && scripts/schemathesis.sh

sqlx-prepare: ## Regenerate .sqlx/ after changing a query or a migration
	@scripts/sqlx-prepare.sh

clean-data: ## Delete the private PostgreSQL/Redis data under .data/
	@rm -rf .data

# Besides invariants/, the modules that took settlement.rs's other tests, so
# that it runs every test it ran before (only invariants/ repeats).
stress: ## The concurrency suite (invariants/) repeated 200 times per case (STRESS_REPEAT to change)
	@. scripts/env.sh && . scripts/services.sh && services_up && trap services_down EXIT && use_test_database && STRESS_REPEAT=$${STRESS_REPEAT:-200} cargo test -p server --features app/ssr --test api -- invariants:: learner::code_entry:: learner::content:: learner::cross_site:: learner::refusals:: console::codes:: console::resources:: api_v1::idempotency::

faults: ## Fault injection: Redis Cluster failover, Redis down, PostgreSQL restart, kill -9, SIGSTOP (FAULTS_LEARNERS=300)
	@scripts/faults.sh

soak: ## A real server, 64 parallel clients over every page kind (SOAK_SECS=60): 0 unanswered, 0 5xx
	@scripts/soak.sh

mutants: ## Rust (cargo-mutants) and SQL/Lua mutants of the deciding code (hours; not in make test)
	@scripts/mutants.sh

mutants-settlement: ## cargo-mutants over settlement/ and reservation/ against the engine's own suites (~15 min)
	@MUTANTS_HALF=rust MUTANTS_TESTS=engine MUTANTS_FILES="server/engine/src/settlement/*.rs server/engine/src/reservation/mod.rs" scripts/mutants.sh

mutants-sql-lua: ## The SQL (settle_access …) and Lua mutants against the engine's tests (~1 h)
	@MUTANTS_HALF=sql-lua scripts/mutants.sh

bench: ## Release build + benchmark table (settlement vs raw pgbench, hot code, 100k codes, RSS)
	@scripts/bench.sh
