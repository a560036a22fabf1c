//! What "ready" means: PostgreSQL and Redis both answer.
//!
//! `/healthz` only says the process is up; `/readyz` asks each dependency
//! (with a short timeout, concurrently) and names the ones that are down so
//! that an operator or a load balancer sees *which* one failed.

use std::time::Duration;

use serde::Serialize;
use sqlx::PgPool;

use crate::coordination::Redis;

/// The state of one dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Up,
    Down,
}

/// The readiness report served by `/readyz`.
#[derive(Debug, Clone, Serialize)]
pub struct Readiness {
    pub postgres: Status,
    pub redis: Status,
}

impl Readiness {
    pub fn is_ready(&self) -> bool {
        self.postgres == Status::Up && self.redis == Status::Up
    }

    /// The names of the dependencies that are down.
    pub fn down(&self) -> Vec<&'static str> {
        let mut down = Vec::new();
        if self.postgres == Status::Down {
            down.push("postgres");
        }
        if self.redis == Status::Down {
            down.push("redis");
        }
        down
    }
}

/// Asks PostgreSQL whether it takes writes (a standby, or a read-only
/// node, cannot take a settlement: down) and Redis (`PING`) at once, each bounded by
/// `timeout`.
pub async fn check(pool: &PgPool, redis: &Redis, timeout: Duration) -> Readiness {
    let pg = async {
        // Takes writes: not a standby, and not read-only (a just-promoted
        // standby is read-only for a few seconds; `db::primary`).
        let query = sqlx::query_scalar::<_, bool>(
            "SELECT NOT (pg_is_in_recovery() OR current_setting('transaction_read_only')::bool)",
        )
        .fetch_one(pool);
        match tokio::time::timeout(timeout, query).await {
            Ok(Ok(true)) => Status::Up,
            Ok(Ok(false)) => {
                tracing::warn!("readiness: PostgreSQL answers as a standby");
                Status::Down
            }
            Ok(Err(error)) => {
                tracing::warn!(error = %error, "readiness: PostgreSQL is down");
                Status::Down
            }
            Err(_) => {
                tracing::warn!("readiness: PostgreSQL timed out");
                Status::Down
            }
        }
    };
    let rd = async {
        match tokio::time::timeout(timeout, redis.ping()).await {
            Ok(Ok(())) => Status::Up,
            Ok(Err(error)) => {
                tracing::warn!(error = format!("{error:#}"), "readiness: Redis is down");
                Status::Down
            }
            Err(_) => {
                tracing::warn!("readiness: Redis timed out");
                Status::Down
            }
        }
    };
    let (postgres, redis) = tokio::join!(pg, rd);
    Readiness { postgres, redis }
}
