//! Integration tests: the real server on port 0 against real PostgreSQL
//! (a fresh database per test, from `#[sqlx::test]`) and real Redis (a uuid
//! key prefix per test).

mod access_rule;
mod account_mail;
mod api_handover;
mod api_journey;
mod assets;
mod auth;
mod authorisation;
mod bootstrap;
mod code_expiry;
mod console;
mod headers;
mod health;
mod idempotency;
mod leak_alerts;
mod learner;
mod learner_pages;
mod logs;
mod mail;
mod notices;
mod pages;
mod problems;
mod quota_slots;
mod reconcile;
mod security;
mod settlement;
mod storage_s3;
mod support;
mod tokens;
mod transfers;
mod vocabulary;
