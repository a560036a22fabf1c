//! The download lease and its scripts against the machine's Redis
//! (`REDIS_URL`), each test under its own key prefix.

use redis::AsyncCommands as _;

use super::*;
use crate::{coordination::RedisOptions, handover::park};

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
