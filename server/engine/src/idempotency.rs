//! `Idempotency-Key` for the JSON API's creates (a share, a resource, a
//! token, a webhook endpoint): a retry of a request whose answer was lost
//! creates nothing new and gets the original answer.
//!
//! PostgreSQL holds the claim of each key, per tenant and acting member:
//! the request's digest, and once done the created object's id. Claiming
//! is one `INSERT … ON CONFLICT DO NOTHING`, so of any number of retries
//! racing, exactly one runs. The answer itself may carry a secret shown
//! once (a token), so it is never stored in PostgreSQL: it is held in Redis
//! for [`ANSWER_TTL`] ([`hold`], [`held`]). Each claim names its attempt;
//! only that attempt completes or releases it. An attempt is cut off well
//! before [`STALE_AFTER`] (the adapter's [`RUN_LIMIT`]), so a claim still
//! unfinished then belongs to an attempt that died (a crash between the
//! creation and its completion) and is taken over. Keys are reusable after
//! a day; a member's day-old keys are swept whenever they claim one.

use std::time::Duration;

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use crate::{accounts::AccountId, coordination::Redis, tenants::TenantId};

/// How long a created object's answer is held for retries.
pub const ANSWER_TTL: Duration = Duration::from_secs(15 * 60);
/// How long a claim may stay unfinished before a retry takes it over.
pub const STALE_AFTER: Duration = Duration::from_secs(5 * 60);
/// The longest an attempt may run: well inside [`STALE_AFTER`], so no
/// live attempt is ever taken over.
pub const RUN_LIMIT: Duration = Duration::from_secs(3 * 60);

/// Who uses a key: keys of different members (or tenants) never meet.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    pub tenant: TenantId,
    pub actor: AccountId,
}

/// What claiming a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// First use (or a stale claim taken over): run the request as this
    /// attempt.
    Run(Uuid),
    /// Another attempt with this key is running now.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
    /// Done before: this is the object it created.
    Done(Uuid),
}

/// The digest of a request: what it is (`operation`) and what it asked.
pub fn digest(operation: &str, request: &[u8]) -> Vec<u8> {
    let mut hasher = Sha256::new();
    hasher.update(operation.as_bytes());
    hasher.update([0]);
    hasher.update(request);
    hasher.finalize().to_vec()
}

/// Claims `key` for the request with `request_digest`.
pub async fn claim(
    pool: &PgPool,
    scope: Scope,
    key: &str,
    request_digest: &[u8],
) -> anyhow::Result<Claim> {
    let stale = i64::try_from(STALE_AFTER.as_secs()).unwrap_or(i64::MAX);
    let attempt = Uuid::now_v7();
    // Day-old keys are free again: the member's go (this one's included).
    sqlx::query!(
        "DELETE FROM idempotency_keys
         WHERE tenant_id = $1 AND actor_id = $2 AND claimed_at < now() - interval '1 day'",
        scope.tenant.0,
        scope.actor.0,
    )
    .execute(pool)
    .await
    .context("expiring idempotency keys")?;
    let inserted = sqlx::query!(
        "INSERT INTO idempotency_keys (tenant_id, actor_id, key, request_digest, attempt)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        scope.tenant.0,
        scope.actor.0,
        key,
        request_digest,
        attempt,
    )
    .execute(pool)
    .await
    .context("claiming an idempotency key")?
    .rows_affected();
    if inserted == 1 {
        return Ok(Claim::Run(attempt));
    }
    let Some(row) = sqlx::query!(
        r#"SELECT request_digest, created_id, claimed_at < now() - make_interval(secs => $4) AS "stale!"
           FROM idempotency_keys WHERE tenant_id = $1 AND actor_id = $2 AND key = $3"#,
        scope.tenant.0,
        scope.actor.0,
        key,
        stale as f64,
    )
    .fetch_optional(pool)
    .await
    .context("reading an idempotency key")?
    else {
        // Released between our insert and our read: the caller retries.
        return Ok(Claim::InFlight);
    };
    if row.request_digest != request_digest {
        return Ok(Claim::Mismatch);
    }
    if let Some(id) = row.created_id {
        return Ok(Claim::Done(id));
    }
    if row.stale {
        // The attempt that claimed it died; exactly one retry takes over.
        let taken = sqlx::query!(
            "UPDATE idempotency_keys SET claimed_at = now(), attempt = $5
             WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND completed_at IS NULL
               AND claimed_at < now() - make_interval(secs => $4)",
            scope.tenant.0,
            scope.actor.0,
            key,
            stale as f64,
            attempt,
        )
        .execute(pool)
        .await
        .context("taking over a stale idempotency key")?
        .rows_affected();
        if taken == 1 {
            return Ok(Claim::Run(attempt));
        }
    }
    Ok(Claim::InFlight)
}

/// Records what the claimed request created (only its own attempt can).
pub async fn complete(
    pool: &PgPool,
    scope: Scope,
    key: &str,
    attempt: Uuid,
    created: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE idempotency_keys SET created_id = $5, completed_at = now()
         WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND attempt = $4
           AND completed_at IS NULL",
        scope.tenant.0,
        scope.actor.0,
        key,
        attempt,
        created,
    )
    .execute(pool)
    .await
    .context("completing an idempotency key")?;
    Ok(())
}

/// Frees a claim whose request failed: a retry runs it again (only its
/// own attempt can).
pub async fn release(pool: &PgPool, scope: Scope, key: &str, attempt: Uuid) -> anyhow::Result<()> {
    sqlx::query!(
        "DELETE FROM idempotency_keys
         WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND attempt = $4
           AND completed_at IS NULL",
        scope.tenant.0,
        scope.actor.0,
        key,
        attempt,
    )
    .execute(pool)
    .await
    .context("releasing an idempotency key")?;
    Ok(())
}

/// Holds the answer of a completed request for [`ANSWER_TTL`].
pub async fn hold(redis: &Redis, scope: Scope, key: &str, answer: &str) -> anyhow::Result<()> {
    redis::cmd("SET")
        .arg(
            redis
                .keys()
                .idempotent_answer(scope.tenant.0, scope.actor.0, key),
        )
        .arg(answer)
        .arg("EX")
        .arg(ANSWER_TTL.as_secs())
        .query_async::<()>(&mut redis.conn())
        .await
        .context("holding an answer in Redis")
}

/// The answer [`hold`] holds, while it does.
pub async fn held(redis: &Redis, scope: Scope, key: &str) -> anyhow::Result<Option<String>> {
    redis::cmd("GET")
        .arg(
            redis
                .keys()
                .idempotent_answer(scope.tenant.0, scope.actor.0, key),
        )
        .query_async(&mut redis.conn())
        .await
        .context("reading a held answer")
}
