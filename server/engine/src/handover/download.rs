//! The CSV download of a batch's parked codes, and the lease it holds.
//!
//! Only one download runs at a time, so that nobody gets the codes while
//! the admin's download is in flight. It does not stop someone holding
//! the admin's session from taking them by breaking off a download of
//! their own near its end (the copy stays parked for the admin's
//! download, which then succeeds as usual); so every download is in the
//! tenant's audit log, the completed ones (`batch.downloaded`) and the
//! broken-off ones (`batch.download_broken`, with how many rows had been
//! handed over): an admin who sees a break they did not cause revokes the
//! batch.
//! [`start_download`] takes a lease in Redis
//! (`SET NX PX`, a random token) before reading the codes; while it is
//! held every other download is refused ([`Download::InProgress`]). The
//! lease lives [`DOWNLOAD_LEASE`] and is renewed while the body keeps
//! flowing ([`DownloadLease::keep_alive`], `renew.lua`); it ends with the
//! codes when the download completes, is released (`release.lua`, only
//! while it still holds this download's token) when the body is dropped
//! before that, and otherwise expires: a download whose server side
//! vanished blocks retries for [`DOWNLOAD_LEASE`] at most.

use std::{
    sync::LazyLock,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use redis::Script;
use uuid::Uuid;

use super::{Copy, parked::peek};
use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    coordination::{Redis, script},
    tenants::TenantId,
};

/// How long a CSV download's lease lives without being renewed: the most
/// a download whose server side vanished (crash, lost Redis reply) blocks
/// a retry. A download in progress renews it every third of that.
pub const DOWNLOAD_LEASE: Duration = Duration::from_secs(60);

static RELEASE: LazyLock<Script> =
    LazyLock::new(|| script("handover/release.lua", include_str!("release.lua")));
static RENEW: LazyLock<Script> =
    LazyLock::new(|| script("handover/renew.lua", include_str!("renew.lua")));

fn lease_ms() -> u64 {
    u64::try_from(DOWNLOAD_LEASE.as_millis()).unwrap_or(u64::MAX)
}

/// What a request for the CSV download gets.
#[derive(Debug)]
pub enum Download {
    /// The codes, and the lease this download holds until it ends.
    Ready(Vec<String>, DownloadLease),
    /// Another download of the batch is in flight.
    InProgress,
    /// Downloaded already, expired, or not this admin's.
    Gone,
}

/// Starts a CSV download of `owner`'s `batch` in `tenant`: takes the
/// batch's download lease, then reads the codes (without removing them).
/// How the download ends goes to the tenant's audit log (`pool`).
pub async fn start_download(
    pool: &sqlx::PgPool,
    redis: &Redis,
    tenant: TenantId,
    owner: AccountId,
    batch: Uuid,
) -> anyhow::Result<Download> {
    let token = Uuid::new_v4().simple().to_string();
    let taken: Option<String> = redis::cmd("SET")
        .arg(redis.keys().handover_lease(owner.0, batch))
        .arg(&token)
        .arg("NX")
        .arg("PX")
        .arg(lease_ms())
        .query_async(&mut redis.conn())
        .await
        .context("taking a codes download lease")?;
    if taken.is_none() {
        return Ok(Download::InProgress);
    }
    let mut lease = DownloadLease {
        redis: Some(redis.clone()),
        pool: pool.clone(),
        tenant,
        owner,
        batch,
        token,
        renewed: Instant::now(),
        rows: 0,
        rows_sent: 0,
        rows_handed_out: 0,
        via: None,
    };
    match peek(redis, owner, batch, Copy::Csv).await {
        Ok(Some(codes)) => {
            lease.rows = codes.len();
            Ok(Download::Ready(codes, lease))
        }
        Ok(None) => {
            lease.release().await?;
            Ok(Download::Gone)
        }
        // Nothing was downloaded: give the lease up (not a broken download).
        Err(error) => {
            if let Err(release) = lease.release().await {
                tracing::warn!(
                    error = format!("{release:#}"),
                    "releasing a codes download's lease failed; it expires"
                );
            }
            Err(error)
        }
    }
}

/// A CSV download's hold on its batch. Dropped before [`Self::finish`] (the
/// body stream dropped midway), it is released in the background.
#[derive(Debug)]
pub struct DownloadLease {
    /// `None` once ended.
    redis: Option<Redis>,
    /// Where the download's end is audited.
    pool: sqlx::PgPool,
    tenant: TenantId,
    owner: AccountId,
    batch: Uuid,
    token: String,
    renewed: Instant,
    /// Codes in the download; how many the connection had accepted and how
    /// many had been handed out (see [`Self::progress`]).
    rows: usize,
    rows_sent: usize,
    rows_handed_out: usize,
    /// Which login of the owner downloads (`session`, `token:<id>`), for
    /// the audit log: a download an admin did not make stands out.
    via: Option<String>,
}

impl DownloadLease {
    /// Names the login that downloads, for the audit entry.
    pub fn via(&mut self, login: String) {
        self.via = Some(login);
    }

    /// Renews the lease if a third of [`DOWNLOAD_LEASE`] has passed since it
    /// was last; `false` if it is no longer this download's (it expired,
    /// and another may have started): the download must stop.
    pub async fn keep_alive(&mut self) -> anyhow::Result<bool> {
        let Some(redis) = &self.redis else {
            return Ok(false);
        };
        if self.renewed.elapsed() < DOWNLOAD_LEASE / 3 {
            return Ok(true);
        }
        let renewed: u8 = RENEW
            .key(redis.keys().handover_lease(self.owner.0, self.batch))
            .arg(&self.token)
            .arg(lease_ms())
            .invoke_async(&mut redis.conn())
            .await
            .context("running renew.lua")?;
        self.renewed = Instant::now();
        Ok(renewed == 1)
    }

    /// Where the download has got to: `accepted` rows were taken by the
    /// connection, `handed_out` rows were given to it (the client may hold
    /// any number in between). Never more than the download's rows.
    pub fn progress(&mut self, accepted: usize, handed_out: usize) {
        self.rows_sent = accepted.min(self.rows);
        self.rows_handed_out = handed_out.max(accepted).min(self.rows);
    }

    /// The whole body has been handed to the connection: audits the
    /// download, then deletes the codes (for good) and the lease. Runs to
    /// the end even if this future is dropped (the connection going away
    /// right after the last bytes): a completed download is never left
    /// unaudited with its codes still parked.
    pub async fn finish(mut self) -> anyhow::Result<()> {
        let Some(ending) = self.ending() else {
            return Ok(());
        };
        tokio::spawn(ending.run(Ended::Completed))
            .await
            .context("finishing a codes download")?
    }

    /// Gives the lease up, leaving the codes parked (nothing was
    /// downloaded: not audited).
    pub async fn release(mut self) -> anyhow::Result<()> {
        let Some(redis) = self.redis.take() else {
            return Ok(());
        };
        end(&redis, self.owner, self.batch, &self.token, false).await
    }

    /// What ending the download needs, taking it from the lease (which is
    /// then ended: its drop does nothing).
    fn ending(&mut self) -> Option<Ending> {
        Some(Ending {
            redis: self.redis.take()?,
            pool: self.pool.clone(),
            tenant: self.tenant,
            owner: self.owner,
            batch: self.batch,
            token: std::mem::take(&mut self.token),
            rows: self.rows,
            rows_sent: self.rows_sent,
            rows_handed_out: self.rows_handed_out,
            via: self.via.take(),
        })
    }
}

impl Drop for DownloadLease {
    fn drop(&mut self) {
        // Without a runtime (shutting down) the lease simply expires.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Some(ending) = self.ending() else {
            return;
        };
        runtime.spawn(async move {
            if let Err(error) = ending.run(Ended::Broken).await {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "ending a broken codes download failed (its lease expires)"
                );
            }
        });
    }
}

/// A download's end, detached from its lease.
struct Ending {
    redis: Redis,
    pool: sqlx::PgPool,
    tenant: TenantId,
    owner: AccountId,
    batch: Uuid,
    token: String,
    rows: usize,
    rows_sent: usize,
    rows_handed_out: usize,
    via: Option<String>,
}

impl Ending {
    /// Audits first (a failure to end the lease must not hide the
    /// download), then ends the lease, discarding the codes if completed,
    /// whatever the audit answered: a completed download never leaves its
    /// codes downloadable again, a broken one never keeps its lease.
    async fn run(self, ended: Ended) -> anyhow::Result<()> {
        let audited = self.audit(ended).await;
        if let Err(error) = &audited {
            tracing::error!(
                error = format!("{error:#}"),
                "auditing a codes download failed"
            );
        }
        let completed = matches!(ended, Ended::Completed);
        end(&self.redis, self.owner, self.batch, &self.token, completed).await?;
        audited
    }

    async fn audit(&self, ended: Ended) -> anyhow::Result<()> {
        let completed = matches!(ended, Ended::Completed);
        let (rows_sent, rows_handed_out) = if completed {
            (self.rows, self.rows)
        } else {
            (self.rows_sent, self.rows_handed_out)
        };
        let mut conn = self
            .pool
            .acquire()
            .await
            .context("auditing a codes download")?;
        audit::record(
            &mut conn,
            AuditEntry {
                tenant: self.tenant,
                actor: Some(self.owner),
                action: if completed {
                    "batch.downloaded"
                } else {
                    "batch.download_broken"
                },
                target_type: "batch",
                target_id: Some(self.batch),
                reason: None,
                details: {
                    let mut details = serde_json::json!({
                        "rows": self.rows,
                        "rows_sent": rows_sent,
                        "rows_handed_out": rows_handed_out,
                    });
                    if let Some(via) = &self.via {
                        details["via"] = serde_json::Value::from(via.as_str());
                    }
                    details
                },
            },
        )
        .await
    }
}

/// How a download ended, for the audit log.
#[derive(Debug, Clone, Copy)]
enum Ended {
    Completed,
    Broken,
}

/// Runs `release.lua`: the lease goes if still `token`'s; with `discard`,
/// the parked CSV codes go too.
async fn end(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    token: &str,
    discard: bool,
) -> anyhow::Result<()> {
    let keys = redis.keys();
    let mut invocation = RELEASE.key(keys.handover_lease(owner.0, batch));
    if discard {
        invocation.key(keys.handover(owner.0, batch, Copy::Csv.as_str()));
    }
    let _released: u8 = invocation
        .arg(token)
        .invoke_async(&mut redis.conn())
        .await
        .context("running release.lua")?;
    Ok(())
}

#[cfg(test)]
mod tests;
