//! Integration tests: the real server on port 0 against real PostgreSQL
//! (a fresh database per test, from `#[sqlx::test]`) and real Redis (a uuid
//! key prefix per test).

mod accounts;
mod api_v1;
mod assets;
mod auth;
mod authorisation;
mod bootstrap;
mod console;
mod headers;
mod health;
mod invariants;
mod learner;
mod learner_pages;
mod logs;
mod mail;
mod pages;
mod security;
mod storage_s3;
mod support;
mod vocabulary;
