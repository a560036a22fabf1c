//! A learner's access period: a share may give each learner access for a
//! number of days from their first access (`shares.access_days`), after
//! which the settlement refuses them ("your access ended on …") and the
//! binding stays, so the code is never usable again. Admins extend one
//! learner, or everyone bound so far, to a date.
//!
//! When a binding's access ends is one SQL function,
//! `binding_access_ends` (`migrations/…_access_periods.sql`): the
//! period's end, or the extension if later. The settlement
//! (`settle_access`) and the bytes route's live-grant check
//! ([`crate::grants`]) both ask it; this module only sets extensions,
//! never shortens anything, and audits each one.

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId, audit, code_actions::CodeError, code_actions::rfc3339, shares::ShareId,
    tenants::TenantId,
};

/// An extension is to a moment still to come (at most a century ahead).
fn check_until(until: OffsetDateTime, now: OffsetDateTime) -> Result<OffsetDateTime, CodeError> {
    crate::code_actions::future_date(until, now).ok_or(CodeError::InvalidExtension)
}

/// Extends the access of the learner bound to `code` to `until` (or keeps
/// a later end they already have). Returns when their access now ends.
/// Refused for a code nobody holds, and for a share that gives access for
/// good (nothing to extend). Audited.
pub async fn extend_one(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    until: OffsetDateTime,
) -> Result<OffsetDateTime, CodeError> {
    let until = check_until(until, OffsetDateTime::now_utc())?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let row = sqlx::query!(
        r#"SELECT c.share_id, c.bound_principal, s.access_days
           FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           WHERE c.tenant_id = $1 AND c.id = $2
           FOR UPDATE OF c FOR SHARE OF s"#,
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the binding")?
    .ok_or(CodeError::CodeNotFound)?;
    let Some(learner) = row.bound_principal else {
        return Err(CodeError::CodeNotBound);
    };
    if row.access_days.is_none() {
        return Err(CodeError::NoAccessPeriod);
    }
    let ends = sqlx::query_scalar!(
        r#"UPDATE auth_codes c SET access_until = greatest(c.access_until, $3)
           FROM shares s
           WHERE c.tenant_id = $1 AND c.id = $2 AND s.tenant_id = c.tenant_id AND s.id = c.share_id
           RETURNING binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS "ends!""#,
        tenant.0,
        code,
        until,
    )
    .fetch_one(&mut *tx)
    .await
    .context("extending a learner's access")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "access.extended",
        ("code", code),
        json!({ "share_id": row.share_id, "learner": learner, "until": rfc3339(Some(until)),
                "ends": rfc3339(Some(ends)) }),
    )
    .await?;
    tx.commit().await.context("committing an extension")?;
    Ok(ends)
}

/// How many learners of `share` still have access now and would lose it
/// at once if the share's period became `days` (`None`: for good, which
/// cuts nobody off). The console asks before it shortens a period.
pub async fn cut_off_by(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    days: Option<i32>,
) -> anyhow::Result<i64> {
    let Some(days) = days else {
        return Ok(0);
    };
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!"
           FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           WHERE c.tenant_id = $1 AND c.share_id = $2
             AND c.bound_principal IS NOT NULL AND c.revoked_at IS NULL
             AND coalesce(binding_access_ends(c.first_used_at, c.access_until, s.access_days) > now(), true)
             AND binding_access_ends(c.first_used_at, c.access_until, $3) <= now()"#,
        tenant.0,
        share.0,
        days,
    )
    .fetch_one(pool)
    .await
    .context("counting the learners a shorter period would cut off")
}

/// Learners extended per transaction by [`extend_all`]: each chunk's row
/// locks are held for one short statement, so settlements of the share's
/// learners wait at most one chunk, never the whole share.
const EXTEND_CHUNK: i64 = 1_000;

/// Extends the access of everyone bound in `share` so far to `until`
/// (learners who already have a later end keep it; learners who bind
/// later get the share's period from their own first access). Returns how
/// many learners it reached. Audited.
///
/// Runs in chunks of [`EXTEND_CHUNK`] learners, one transaction each, in
/// code id order; the audit entry is written with the last chunk. The
/// extension only ever moves ends later, so a call that fails partway is
/// finished by calling again (the learners already extended are skipped).
pub async fn extend_all(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    until: OffsetDateTime,
) -> Result<u64, CodeError> {
    let until = check_until(until, OffsetDateTime::now_utc())?;
    let mut extended: u64 = 0;
    let mut after: Option<Uuid> = None;
    loop {
        let mut tx = pool.begin().await.context("starting a transaction")?;
        let access_days = sqlx::query_scalar!(
            "SELECT access_days FROM shares WHERE tenant_id = $1 AND id = $2 FOR SHARE",
            tenant.0,
            share.0,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading the share's access period")?
        .ok_or(CodeError::ShareNotFound)?;
        if access_days.is_none() {
            return Err(CodeError::NoAccessPeriod);
        }
        // The next chunk of the share's bound codes, whether or not they
        // need the extension (so that the walk always moves on).
        let chunk = sqlx::query!(
            r#"WITH chunk AS (
                   SELECT id FROM auth_codes
                   WHERE tenant_id = $1 AND share_id = $2 AND bound_principal IS NOT NULL
                     AND ($4::uuid IS NULL OR id > $4)
                   ORDER BY id
                   LIMIT $5
               ), extended AS (
                   UPDATE auth_codes c SET access_until = $3
                   FROM chunk
                   WHERE c.tenant_id = $1 AND c.id = chunk.id AND c.bound_principal IS NOT NULL
                     AND c.revoked_at IS NULL AND (c.access_until IS NULL OR c.access_until < $3)
                   RETURNING c.id
               )
               SELECT (SELECT id FROM chunk ORDER BY id DESC LIMIT 1) AS last,
                      (SELECT count(*) FROM chunk) AS "walked!",
                      (SELECT count(*) FROM extended) AS "extended!""#,
            tenant.0,
            share.0,
            until,
            after,
            EXTEND_CHUNK,
        )
        .fetch_one(&mut *tx)
        .await
        .context("extending a chunk of learners' access")?;
        extended += u64::try_from(chunk.extended).unwrap_or_default();
        let done = chunk.walked < EXTEND_CHUNK;
        if done {
            audit::admin_action(
                &mut tx,
                tenant,
                actor,
                "access.extended_all",
                ("share", share.0),
                json!({ "until": rfc3339(Some(until)), "learners": extended }),
            )
            .await?;
        }
        tx.commit().await.context("committing an extension")?;
        if done {
            return Ok(extended);
        }
        after = chunk.last;
    }
}
