//! What every page and request relies on: authorisation, server functions'
//! answers, rate limits, headers, logs, health, assets, page rendering,
//! the operator's commands, the mail relay, S3 storage and the model's
//! vocabulary.

mod assets;
mod authorisation;
mod bootstrap;
mod database_url;
mod fairness;
mod headers;
mod health;
mod hosts;
mod logs;
mod mail_relay;
mod mail_tls;
mod pages;
mod rate_limits;
mod server_functions;
mod storage_s3;
mod vocabulary;
