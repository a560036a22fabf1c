//! Integration tests: the real server on port 0 against real PostgreSQL
//! (a fresh database per test, from `#[sqlx::test]`) and real Redis (a uuid
//! key prefix per test).

mod access_period;
mod access_rule;
mod account_mail;
mod api_handover;
mod api_journey;
mod assets;
mod auth;
mod authorisation;
mod bootstrap;
mod branding;
mod code_expiry;
mod code_table;
mod console;
mod headers;
mod health;
mod idempotency;
mod imported_codes;
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
mod team;
mod time_zone;
mod tokens;
mod transfers;
mod vocabulary;
mod webhooks;
