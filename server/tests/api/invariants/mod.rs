//! The concurrency suite: real parallel HTTP requests through the running
//! app, then the final state checked with SQL and the invariants
//! (`engine::invariants`). The repeated cases run `repeats()` rounds
//! (`STRESS_REPEAT`, 20 by default; `make stress` raises it). Shared here:
//! holding a share's quota lock until settlements queue on it, and breaking
//! a reservation key.

mod failover;
mod faults;
mod one_code;
mod one_learner;
mod openings;
mod quota_and_limit;
mod reconcile;
mod reconcile_batches;
mod revocations;
mod standby_reads;
mod transfers;

use uuid::Uuid;

/// A connection of the test's own holding `share`'s quota lock exclusively,
/// as `share_quota_rebalance` does: settlements of the share wait on it.
async fn hold_quota_lock(
    app: &crate::support::app::TestApp,
    share: Uuid,
) -> sqlx::pool::PoolConnection<sqlx::Postgres> {
    let mut held = app.pool.acquire().await.expect("connection");
    sqlx::query("SELECT pg_advisory_lock(share_quota_lock_key($1))")
        .bind(share)
        .execute(&mut *held)
        .await
        .expect("the share's quota lock");
    held
}

/// Lets the lock of [`hold_quota_lock`] go once `waiters` settlements wait
/// on it (or after three seconds, below the settlements' own budget).
async fn release_when_waited_on(
    mut held: sqlx::pool::PoolConnection<sqlx::Postgres>,
    waiters: i64,
) {
    for _ in 0..300 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .fetch_one(&mut *held)
        .await
        .expect("pg_locks");
        if waiting >= waiters {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    sqlx::query("SELECT pg_advisory_unlock_all()")
        .execute(&mut *held)
        .await
        .expect("release");
}

/// Makes every use of `key` fail in Redis (a hash where a string is
/// expected): the reservation script errors while sessions still work.
async fn poison(app: &crate::support::app::TestApp, key: &str) {
    use redis::AsyncCommands as _;
    let _: () = app
        .redis
        .conn()
        .hset(key, "not", "a string")
        .await
        .expect("hset");
    let _: () = app.redis.conn().expire(key, 60).await.expect("expire");
}
