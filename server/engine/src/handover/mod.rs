//! Handing a batch's plain codes to the admin who issued it, once.
//!
//! The database never holds a plain code, so the only moment codes exist in
//! full is right after issuing. They are parked in Redis under two keys
//! (one for the result page, one for the CSV download), readable by the
//! issuing admin only and gone after [`HANDOVER_TTL`] anyway. A batch
//! issued through the API with an `Idempotency-Key` has a third copy
//! instead, its whole answer ([`hold_answer`]), read by each retry of that
//! request until the TTL (or until the batch's unused codes are revoked). If parking
//! fails, the caller revokes the batch: codes nobody ever saw must not stay
//! usable.
//!
//! The page copy is taken in one step (`GETDEL`): a page is small and
//! rendered whole. The CSV copy can be megabytes streamed over a slow
//! link, so it is deleted only once the server has handed the whole body
//! to the connection ([`DownloadLease::finish`]). A download that breaks
//! before that (client gone, network cut) leaves the codes parked and can
//! be retried, in full, until [`HANDOVER_TTL`] runs out; after a completed
//! one every request gets nothing. HTTP cannot tell whether the client
//! stored the file: "completed" means the server sent it all, no more.
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

use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    coordination::Redis,
    tenants::TenantId,
};

/// How long plain codes wait for their one viewing.
pub const HANDOVER_TTL: Duration = Duration::from_secs(15 * 60);

/// Which one-time copy to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// The result page right after issuing.
    Page,
    /// The CSV download.
    Csv,
    /// An API client's whole answer (JSON), read again by every retry with
    /// the same `Idempotency-Key` until [`HANDOVER_TTL`]: see
    /// [`hold_answer`].
    ApiAnswer,
}

impl Copy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Csv => "csv",
            Self::ApiAnswer => "api-answer",
        }
    }
}

/// Parks `codes` (display form) for one viewing of each copy.
pub async fn park(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    codes: &[String],
) -> anyhow::Result<()> {
    let body = serde_json::to_string(codes).context("encoding codes")?;
    let ttl = HANDOVER_TTL.as_secs();
    let keys = redis.keys();
    redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(keys.handover(owner.0, batch, Copy::Page.as_str()))
        .arg(&body)
        .arg("EX")
        .arg(ttl)
        .ignore()
        .cmd("SET")
        .arg(keys.handover(owner.0, batch, Copy::Csv.as_str()))
        .arg(&body)
        .arg("EX")
        .arg(ttl)
        .ignore()
        .query_async::<()>(&mut redis.conn())
        .await
        .context("parking issued codes in Redis")
}

/// Holds an API client's answer to "issue codes" (its plain codes
/// included) for [`HANDOVER_TTL`], so that a retry with the same
/// `Idempotency-Key` (the client lost the answer) gets the same answer
/// instead of nothing.
pub async fn hold_answer(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    answer: &str,
) -> anyhow::Result<()> {
    redis::cmd("SET")
        .arg(
            redis
                .keys()
                .handover(owner.0, batch, Copy::ApiAnswer.as_str()),
        )
        .arg(answer)
        .arg("EX")
        .arg(HANDOVER_TTL.as_secs())
        .query_async::<()>(&mut redis.conn())
        .await
        .context("holding an API answer in Redis")
}

/// The answer [`hold_answer`] holds for `owner`'s `batch`, while it does.
pub async fn held_answer(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
) -> anyhow::Result<Option<String>> {
    redis::cmd("GET")
        .arg(
            redis
                .keys()
                .handover(owner.0, batch, Copy::ApiAnswer.as_str()),
        )
        .query_async(&mut redis.conn())
        .await
        .context("reading a held API answer")
}

/// Takes one copy: the codes the first time, `None` ever after (or for
/// anyone but the issuing admin).
pub async fn take(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    copy: Copy,
) -> anyhow::Result<Option<Vec<String>>> {
    let body: Option<String> = redis::cmd("GETDEL")
        .arg(redis.keys().handover(owner.0, batch, copy.as_str()))
        .query_async(&mut redis.conn())
        .await
        .context("taking issued codes from Redis")?;
    body.map(|b| serde_json::from_str(&b).context("decoding parked codes"))
        .transpose()
}

/// Reads a copy without removing it.
async fn peek(
    redis: &Redis,
    owner: AccountId,
    batch: Uuid,
    copy: Copy,
) -> anyhow::Result<Option<Vec<String>>> {
    let body: Option<String> = redis::cmd("GET")
        .arg(redis.keys().handover(owner.0, batch, copy.as_str()))
        .query_async(&mut redis.conn())
        .await
        .context("reading issued codes from Redis")?;
    body.map(|b| serde_json::from_str(&b).context("decoding parked codes"))
        .transpose()
}

/// How long a CSV download's lease lives without being renewed: the most
/// a download whose server side vanished (crash, lost Redis reply) blocks
/// a retry. A download in progress renews it every third of that.
pub const DOWNLOAD_LEASE: Duration = Duration::from_secs(60);

static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("release.lua")));
static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("renew.lua")));

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
mod tests {
    //! The download lease and its scripts against the machine's Redis
    //! (`REDIS_URL`), each test under its own key prefix.
    use redis::AsyncCommands as _;

    use super::*;
    use crate::coordination::RedisOptions;

    async fn connect() -> Redis {
        let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
        Redis::connect(&RedisOptions {
            urls: vec![url],
            cluster: false,
            key_prefix: format!("test:{}", Uuid::new_v4()),
            response_timeout: Duration::from_secs(5),
        })
        .await
        .expect("Redis handle")
    }

    async fn lease_holder(redis: &Redis, owner: AccountId, batch: Uuid) -> Option<String> {
        redis
            .conn()
            .get(redis.keys().handover_lease(owner.0, batch))
            .await
            .expect("GET")
    }

    async fn lease_pttl(redis: &Redis, owner: AccountId, batch: Uuid) -> i64 {
        redis::cmd("PTTL")
            .arg(redis.keys().handover_lease(owner.0, batch))
            .query_async(&mut redis.conn())
            .await
            .expect("PTTL")
    }

    const TENANT: TenantId = TenantId(Uuid::nil());

    fn codes() -> Vec<String> {
        vec!["ABCD-2345-WXYZ".to_owned(), "EFGH-6789-JKLM".to_owned()]
    }

    /// The issuing admin (the audit log names an account).
    async fn admin(pool: &sqlx::PgPool) -> AccountId {
        let id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO accounts (id, email, display_name, password_hash) VALUES ($1, $2, 'A', 'x')",
        )
        .bind(id)
        .bind(format!("{id}@example.com"))
        .execute(pool)
        .await
        .expect("account");
        AccountId(id)
    }

    async fn audited(pool: &sqlx::PgPool, batch: Uuid) -> Vec<(String, serde_json::Value)> {
        sqlx::query_as("SELECT action, details FROM audit_log WHERE target_id = $1 ORDER BY id")
            .bind(batch)
            .fetch_all(pool)
            .await
            .expect("audit log")
    }

    fn ready(download: Download) -> (Vec<String>, DownloadLease) {
        match download {
            Download::Ready(codes, lease) => (codes, lease),
            other => panic!("expected the codes, got {other:?}"),
        }
    }

    #[sqlx::test(migrations = "../../migrations")]
    async fn one_download_at_a_time_and_only_its_holder_ends_the_lease(pool: sqlx::PgPool) {
        let redis = connect().await;
        let (owner, batch) = (admin(&pool).await, Uuid::new_v4());
        park(&redis, owner, batch, &codes()).await.expect("park");

        let (got, lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("first"),
        );
        assert_eq!(got, codes());
        let holder = lease_holder(&redis, owner, batch).await.expect("a lease");
        assert_eq!(holder, lease.token);
        let pttl = lease_pttl(&redis, owner, batch).await;
        assert!((1..=60_000).contains(&pttl), "the lease expires: {pttl}");
        // A second download meanwhile is refused, and takes nothing.
        assert!(matches!(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("second"),
            Download::InProgress
        ));
        // Someone else's token neither ends the lease nor discards the codes
        // (release.lua deletes only the parked copy it is asked to).
        end(&redis, owner, batch, "not-this-download", false)
            .await
            .expect("foreign release");
        assert_eq!(lease_holder(&redis, owner, batch).await, Some(holder));
        // The holder's release ends it and leaves the codes for a retry.
        lease.release().await.expect("release");
        assert_eq!(lease_holder(&redis, owner, batch).await, None);
        let (again, lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("retry"),
        );
        assert_eq!(again, codes(), "a broken download can be retried in full");
        // A completed download removes the codes and the lease for good,
        // and is audited; the released one was no download.
        assert_eq!(audited(&pool, batch).await, []);
        let mut lease = lease;
        lease.progress(1, 5);
        assert_eq!(
            (lease.rows_sent, lease.rows_handed_out),
            (1, 2),
            "never past the download's rows"
        );
        lease.progress(3, 0);
        assert_eq!(
            (lease.rows_sent, lease.rows_handed_out),
            (2, 2),
            "handed out is at least accepted"
        );
        lease.finish().await.expect("finish");
        assert_eq!(
            audited(&pool, batch).await,
            [(
                "batch.downloaded".to_owned(),
                serde_json::json!({ "rows": 2, "rows_sent": 2, "rows_handed_out": 2 })
            )],
        );
        assert_eq!(lease_holder(&redis, owner, batch).await, None);
        assert!(matches!(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("after"),
            Download::Gone
        ));
        assert_eq!(
            lease_holder(&redis, owner, batch).await,
            None,
            "Gone keeps no lease"
        );
    }

    /// The connection goes away right after the last bytes: the finishing
    /// future is dropped at its first await. The download still ends as
    /// completed: audited, codes and lease gone.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_finish_cut_short_still_audits_and_discards(pool: sqlx::PgPool) {
        let redis = connect().await;
        let (owner, batch) = (admin(&pool).await, Uuid::new_v4());
        park(&redis, owner, batch, &codes()).await.expect("park");
        let (_, lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("start"),
        );
        // Polled once, then dropped.
        let cut = tokio::time::timeout(Duration::ZERO, lease.finish()).await;
        assert!(cut.is_err(), "the finish was cut short");
        let started = Instant::now();
        while audited(&pool, batch).await.is_empty() && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            audited(&pool, batch).await,
            [(
                "batch.downloaded".to_owned(),
                serde_json::json!({ "rows": 2, "rows_sent": 2, "rows_handed_out": 2 })
            )]
        );
        while lease_holder(&redis, owner, batch).await.is_some()
            && started.elapsed() < Duration::from_secs(5)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(matches!(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("after"),
            Download::Gone
        ));
    }

    /// The audit fails (PostgreSQL away): the completed download still
    /// discards the codes and ends its lease, and the failure is reported.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_completed_download_whose_audit_fails_still_discards(pool: sqlx::PgPool) {
        let redis = connect().await;
        let (owner, batch) = (admin(&pool).await, Uuid::new_v4());
        park(&redis, owner, batch, &codes()).await.expect("park");
        let (_, lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("start"),
        );
        pool.close().await;
        assert!(
            lease.finish().await.is_err(),
            "the audit failure is reported"
        );
        assert_eq!(
            lease_holder(&redis, owner, batch).await,
            None,
            "lease ended"
        );
        let csv: Option<String> = redis
            .conn()
            .get(redis.keys().handover(owner.0, batch, Copy::Csv.as_str()))
            .await
            .expect("GET");
        assert_eq!(csv, None, "the codes are not downloadable again");
    }

    /// A download dropped midway (the body stream dropped) is audited as
    /// broken, with how far it got, and leaves the codes for a retry.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_dropped_download_is_audited_as_broken_and_stays_retryable(pool: sqlx::PgPool) {
        let redis = connect().await;
        let (owner, batch) = (admin(&pool).await, Uuid::new_v4());
        park(&redis, owner, batch, &codes()).await.expect("park");
        let (_, mut lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("start"),
        );
        lease.progress(1, 2);
        drop(lease);
        let started = Instant::now();
        while (audited(&pool, batch).await.is_empty()
            || lease_holder(&redis, owner, batch).await.is_some())
            && started.elapsed() < Duration::from_secs(5)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            audited(&pool, batch).await,
            [(
                "batch.download_broken".to_owned(),
                serde_json::json!({ "rows": 2, "rows_sent": 1, "rows_handed_out": 2 })
            )]
        );
        let (again, _lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("retry"),
        );
        assert_eq!(again, codes());
    }

    #[sqlx::test(migrations = "../../migrations")]
    async fn a_lease_renews_only_while_it_is_still_this_downloads(pool: sqlx::PgPool) {
        let redis = connect().await;
        let (owner, batch) = (admin(&pool).await, Uuid::new_v4());
        park(&redis, owner, batch, &codes()).await.expect("park");
        let (_, mut lease) = ready(
            start_download(&pool, &redis, TENANT, owner, batch)
                .await
                .expect("start"),
        );
        let key = redis.keys().handover_lease(owner.0, batch);
        // Shorten it, then pretend a third of the lease has passed.
        let _: bool = redis.conn().pexpire(&key, 5_000).await.expect("PEXPIRE");
        lease.renewed = Instant::now() - DOWNLOAD_LEASE / 2;
        assert!(lease.keep_alive().await.expect("renew"));
        let pttl = lease_pttl(&redis, owner, batch).await;
        assert!(pttl > 50_000, "renewed to the whole lease: {pttl}");
        // Just renewed: no round trip, still ours.
        let _: bool = redis.conn().pexpire(&key, 5_000).await.expect("PEXPIRE");
        assert!(lease.keep_alive().await.expect("recent"));
        assert!(
            lease_pttl(&redis, owner, batch).await <= 5_000,
            "not renewed again yet"
        );
        // The lease expired and another download took it: this one must
        // stop, and must not extend the other's lease.
        let _: () = redis
            .conn()
            .set_ex(&key, "another-download", 7)
            .await
            .expect("SET");
        lease.renewed = Instant::now() - DOWNLOAD_LEASE / 2;
        assert!(!lease.keep_alive().await.expect("foreign"));
        assert!(
            lease_pttl(&redis, owner, batch).await <= 7_000,
            "the other's TTL untouched"
        );
        assert_eq!(
            lease_holder(&redis, owner, batch).await.as_deref(),
            Some("another-download")
        );
        // Ending this download leaves the other's lease alone.
        lease.release().await.expect("release");
        assert_eq!(
            lease_holder(&redis, owner, batch).await.as_deref(),
            Some("another-download")
        );
    }
}
