//! How far a long admin operation has got, for the page that waits on it.
//!
//! Issuing 100,000 codes takes a few seconds. The browser cannot watch the
//! request that does the work, so the work reports `done/total` under a
//! ticket the page chose, and the page polls it. Progress is a courtesy:
//! a report that fails is logged and the work goes on; every key expires
//! after [`PROGRESS_TTL`].

use std::time::Duration;

use anyhow::Context as _;
use uuid::Uuid;

use crate::{accounts::AccountId, coordination::Redis};

/// The longest one progress report may wait for Redis.
pub const REPORT_WAIT: Duration = Duration::from_millis(200);

/// How long a progress report is kept after its last update.
pub const PROGRESS_TTL: Duration = Duration::from_secs(10 * 60);

/// Where one operation reports its progress: a ticket of one account (no
/// one else can read it).
#[derive(Debug, Clone)]
pub struct Progress {
    redis: Redis,
    key: String,
}

impl Progress {
    pub fn new(redis: &Redis, owner: AccountId, ticket: Uuid) -> Self {
        Self {
            key: redis.keys().progress(owner.0, ticket),
            redis: redis.clone(),
        }
    }

    /// Records that `done` of `total` steps are done. Called inside the
    /// issuing transaction, so it waits [`REPORT_WAIT`] at most: a slow
    /// Redis must not hold the transaction's locks.
    pub async fn report(&self, done: u64, total: u64) {
        let mut command = redis::cmd("SET");
        command
            .arg(&self.key)
            .arg(format!("{done}/{total}"))
            .arg("EX")
            .arg(PROGRESS_TTL.as_secs());
        let mut conn = self.redis.conn();
        let set = command.query_async::<()>(&mut conn);
        match tokio::time::timeout(REPORT_WAIT, set).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "reporting progress failed"),
            Err(_) => tracing::warn!("reporting progress timed out"),
        }
    }
}

/// The last report under `ticket` of `owner`, as `(done, total)`.
pub async fn read(
    redis: &Redis,
    owner: AccountId,
    ticket: Uuid,
) -> anyhow::Result<Option<(u64, u64)>> {
    let value: Option<String> = redis::cmd("GET")
        .arg(redis.keys().progress(owner.0, ticket))
        .query_async(&mut redis.conn())
        .await
        .context("reading progress from Redis")?;
    Ok(value.and_then(|v| {
        let (done, total) = v.split_once('/')?;
        Some((done.parse().ok()?, total.parse().ok()?))
    }))
}
