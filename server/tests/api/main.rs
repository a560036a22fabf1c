//! Integration tests: the real server on port 0 against real PostgreSQL
//! (a fresh database per test, from `#[sqlx::test]`) and real Redis (a uuid
//! key prefix per test).
//!
//! Grouped by behaviour: what a learner does (`learner`), what admins
//! manage (`console`), the JSON API's own contracts (`api_v1`), accounts
//! (`accounts`), the concurrency suite (`invariants`) and what every
//! request relies on (`platform`); `support` is the harness and fixtures.

mod accounts;
mod api_v1;
mod console;
mod invariants;
mod learner;
mod platform;
mod support;
