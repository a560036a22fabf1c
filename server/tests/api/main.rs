//! Integration tests: the real server on port 0 against real PostgreSQL
//! (a fresh database per test, from `#[sqlx::test]`) and real Redis (a uuid
//! key prefix per test).

mod access_rule;
mod accounts;
mod api_v1;
mod assets;
mod auth;
mod authorisation;
mod bootstrap;
mod code_expiry;
mod console;
mod headers;
mod health;
mod leak_alerts;
mod learner;
mod learner_pages;
mod logs;
mod mail;
mod pages;
mod quota_slots;
mod reconcile;
mod security;
mod settlement;
mod storage_s3;
mod support;
mod transfers;
mod vocabulary;
