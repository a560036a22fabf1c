//! Shares: a course published once, behind a public link (`/s/<slug>`).
//!
//! A share's settings (title, link name, status, validity window, limits)
//! and the admin actions on them. What hangs off a share has its own
//! module: its content in [`crate::resources`], its access codes in
//! [`crate::batches`] (issued many at a time), [`crate::imports`] (brought
//! in from another system) and [`crate::code_actions`] (what an admin does
//! to one code; the code table, read, is [`crate::code_table`]). Each has
//! its own error enum; each variant's kind, code and text is mapped once
//! (`outcome/`, `app/src/i18n/errors.rs`), and a variant two of them share
//! (`no such share`) answers the same in both.
//!
//! Every admin function takes the tenant explicitly and every query of it
//! filters by it: an admin's request can only ever reach rows of the tenant
//! the caller was authorised for. Two reads take no tenant, on purpose:
//! [`find_by_slug`] (a learner's public link names the share alone) and
//! [`get`] (the JSON API authorises by the share's own tenant before it
//! answers anything about it); the console reads with [`get_in`].
//!
//! What an admin may set on a share, and how it is parsed, is
//! [`input`].

use anyhow::Context as _;
pub use model::Unavailability;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{accounts::AccountId, audit, tenants::TenantId};

mod input;
// The input types are part of this module's vocabulary (`shares::ShareSlug`
// and so on); they live in their own file because parsing is a room of its
// own.
pub use input::{NewShare, ShareInput, ShareSlug, ShareStatus};

/// What refuses a change to a share (its settings, its status).
#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("a title needs 1 to 200 visible characters")]
    InvalidTitle,
    #[error(
        "a link name is 1 to 64 lower-case letters, digits or dashes, not starting or ending with a dash"
    )]
    InvalidSlug,
    #[error("this link name is taken; choose another")]
    SlugTaken,
    #[error("a description has at most 10,000 characters")]
    InvalidDescription,
    #[error("status is one of draft, active, paused, archived")]
    InvalidStatus,
    #[error("{used} accesses are already counted: the total limit cannot be lower")]
    QuotaBelowUse { used: i64 },
    #[error("a learner already used {used} accesses: the per-learner limit cannot be lower")]
    LearnerLimitBelowUse { used: i64 },
    #[error(
        "codes were issued with this link: it cannot change (printed cards and sent links would break)"
    )]
    SlugLocked,
    #[error("limits are whole numbers from 1 to 1,000,000,000")]
    InvalidLimit,
    #[error("the validity window must end after it starts")]
    InvalidWindow,
    #[error("an access period is 1 to 36,500 days (empty: for good)")]
    InvalidAccessDays,
    #[error("no such share")]
    ShareNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

pub use model::ShareId;

/// A share as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Share {
    pub tenant_id: TenantId,
    pub id: ShareId,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub status: ShareStatus,
    #[serde(with = "time::serde::rfc3339::option")]
    pub valid_from: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub valid_until: Option<OffsetDateTime>,
    pub per_learner_limit: Option<i32>,
    pub quota: Option<i32>,
    /// Days of access from each learner's first access (`None`: for good).
    pub access_days: Option<i32>,
    /// Accesses counted against `quota` (the sum of its slots in
    /// `share_quota_slots`); 0 for a share without a quota, which counts
    /// nothing of its own (its access records are the count).
    pub quota_used: i32,
    /// Whether codes imported from another system were brought in here:
    /// then learners may type them ([`crate::codes::TypedCode::read`]).
    #[serde(default)]
    pub foreign_codes: bool,
}

impl Share {
    pub fn tenant(&self) -> TenantId {
        self.tenant_id
    }

    /// Why learners cannot use the share now, if they cannot (its state
    /// and window; the quota is `unavailable_to_newcomers`).
    pub fn unavailable_because(&self, now: OffsetDateTime) -> Option<Unavailability> {
        unavailable(self.status, self.valid_from, self.valid_until, now)
    }

    /// Why nobody new can get in right now, if so: the share's own state,
    /// or its quota used up.
    pub fn unavailable_to_newcomers(&self, now: OffsetDateTime) -> Option<Unavailability> {
        self.unavailable_because(now).or_else(|| {
            self.quota
                .is_some_and(|quota| self.quota_used >= quota)
                .then_some(Unavailability::LimitReached)
        })
    }
}

/// Why learners cannot use a share in `status` with this window at `now`,
/// if they cannot ([`Share::unavailable_because`], for callers that read
/// only these columns).
pub fn unavailable(
    status: ShareStatus,
    valid_from: Option<OffsetDateTime>,
    valid_until: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Option<Unavailability> {
    match status {
        ShareStatus::Active => {}
        ShareStatus::Paused => return Some(Unavailability::Paused),
        ShareStatus::Draft | ShareStatus::Archived => {
            return Some(Unavailability::NotAvailable);
        }
    }
    if valid_from.is_some_and(|from| now < from) {
        return Some(Unavailability::NotOpenYet);
    }
    if valid_until.is_some_and(|until| now >= until) {
        return Some(Unavailability::Closed);
    }
    None
}

/// Creates a share (audited).
pub async fn create_share(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    new: NewShare,
) -> Result<Share, ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let share = sqlx::query_as!(
        Share,
        r#"INSERT INTO shares (tenant_id, id, slug, title, description, status, valid_from, valid_until,
                               per_learner_limit, quota, created_by, access_days)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           -- Any unique key: the link within the tenant; a link another
           -- tenant holds fails in the directory's trigger.
           ON CONFLICT DO NOTHING
           RETURNING tenant_id AS "tenant_id: TenantId", id AS "id: ShareId", slug, title, description,
                     status AS "status: ShareStatus", valid_from, valid_until,
                     per_learner_limit, quota, access_days, foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = shares.tenant_id AND q.share_id = shares.id) AS "quota_used!""#,
        tenant.0,
        Uuid::now_v7(),
        new.slug.as_str(),
        new.title,
        new.description,
        new.status.as_str(),
        new.valid_from,
        new.valid_until,
        new.per_learner_limit,
        new.quota,
        actor.0,
        new.access_days,
    )
    .fetch_optional(&mut *tx)
    .await;
    let share = match share {
        Ok(Some(share)) => share,
        Ok(None) => return Err(ShareError::SlugTaken),
        Err(e)
            if e.as_database_error()
                .is_some_and(|d| d.constraint() == Some("share_links_pkey")) =>
        {
            return Err(ShareError::SlugTaken);
        }
        Err(e) => return Err(anyhow::Error::new(e).context("inserting a share").into()),
    };
    if share.quota.is_some() {
        rebalance_quota(&mut tx, tenant, share.id, share.quota).await?;
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "share.created",
        ("share", share.id.0),
        json!({ "slug": share.slug, "title": share.title, "status": share.status }),
    )
    .await?;
    tx.commit().await.context("committing the share")?;
    Ok(share)
}

/// Which settings an update leaves as the share has them when the update
/// holds its row (a caller that did not name them), rather than as the
/// caller read them before: a change committed meanwhile is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    pub slug: bool,
    pub status: bool,
    /// The access period (an older client that never names it).
    pub access_days: bool,
}

/// Changes a share's settings (audited with the fields that changed);
/// `kept` names those left as they are.
pub async fn update_share(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    new: NewShare,
    kept: Kept,
) -> Result<Share, ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // First, before the share's row: settlements in flight hold this lock
    // shared while they wait for that row (their access record's foreign
    // key), so taking it after the row could deadlock.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(share_quota_lock_key($1))",
        share.0
    )
    .execute(&mut *tx)
    .await
    .context("waiting for the share's settlements")?;
    let before = sqlx::query_as!(
        Share,
        r#"SELECT tenant_id AS "tenant_id: TenantId", id AS "id: ShareId", slug, title, description,
                     status AS "status: ShareStatus", valid_from, valid_until,
                  per_learner_limit, quota, access_days, foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = shares.tenant_id AND q.share_id = shares.id) AS "quota_used!"
           FROM shares WHERE tenant_id = $1 AND id = $2 FOR UPDATE"#,
        tenant.0,
        share.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking a share")?
    .ok_or(ShareError::ShareNotFound)?;
    // Limits cannot go below what is already used (the invariants would
    // be broken for good), and a link handed out with codes stays valid.
    if new.quota != before.quota {
        let used = rebalance_quota(&mut tx, tenant, share, new.quota).await?;
        if new.quota.is_some_and(|quota| i64::from(quota) < used) {
            return Err(ShareError::QuotaBelowUse { used });
        }
    }
    let usage = sqlx::query!(
        r#"SELECT coalesce(max(access_count), 0) AS "most!", count(*) AS "codes!"
           FROM auth_codes WHERE tenant_id = $1 AND share_id = $2"#,
        tenant.0,
        share.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading a share's use")?;
    if new
        .per_learner_limit
        .is_some_and(|limit| limit < usage.most)
    {
        return Err(ShareError::LearnerLimitBelowUse {
            used: i64::from(usage.most),
        });
    }
    let slug = if kept.slug {
        before.slug.as_str()
    } else {
        new.slug.as_str()
    };
    let status = if kept.status {
        before.status
    } else {
        new.status
    };
    let access_days = if kept.access_days {
        before.access_days
    } else {
        new.access_days
    };
    if slug != before.slug && usage.codes > 0 {
        return Err(ShareError::SlugLocked);
    }
    let updated = sqlx::query_as!(
        Share,
        r#"UPDATE shares
           SET slug = $3, title = $4, description = $5, status = $6, valid_from = $7,
               valid_until = $8, per_learner_limit = $9, quota = $10, access_days = $11,
               updated_at = now()
           WHERE tenant_id = $1 AND id = $2
           RETURNING tenant_id AS "tenant_id: TenantId", id AS "id: ShareId", slug, title, description,
                     status AS "status: ShareStatus", valid_from, valid_until,
                     per_learner_limit, quota, access_days, foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = shares.tenant_id AND q.share_id = shares.id) AS "quota_used!""#,
        tenant.0,
        share.0,
        slug,
        new.title,
        new.description,
        status.as_str(),
        new.valid_from,
        new.valid_until,
        new.per_learner_limit,
        new.quota,
        access_days,
    )
    .fetch_one(&mut *tx)
    .await;
    let updated = match updated {
        Ok(share) => share,
        Err(e)
            if e.as_database_error()
                .is_some_and(|d| d.is_unique_violation()) =>
        {
            return Err(ShareError::SlugTaken);
        }
        Err(e) => return Err(anyhow::Error::new(e).context("updating a share").into()),
    };
    let mut changed = serde_json::Map::new();
    let before_json = serde_json::to_value(&before).context("serialising a share")?;
    let after_json = serde_json::to_value(&updated).context("serialising a share")?;
    if let (Some(old), Some(new)) = (before_json.as_object(), after_json.as_object()) {
        for (field, value) in new {
            // Counted by settlements, not changed by this update.
            if field == "quota_used" {
                continue;
            }
            if old.get(field) != Some(value) {
                changed.insert(
                    field.clone(),
                    json!({ "from": old.get(field), "to": value }),
                );
            }
        }
    }
    if !changed.is_empty() {
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            "share.updated",
            ("share", share.0),
            serde_json::Value::Object(changed),
        )
        .await?;
    }
    tx.commit().await.context("committing the share")?;
    Ok(updated)
}

/// Sets the quota slots of `share` for `quota` (none without one) and
/// returns the accesses counted so far; changes nothing when they exceed
/// `quota` (the caller refuses). Waits for the share's settlements in
/// flight (`share_quota_rebalance` in the migrations).
async fn rebalance_quota(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    share: ShareId,
    quota: Option<i32>,
) -> anyhow::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT share_quota_rebalance($1, $2, $3) AS "used!""#,
        tenant.0,
        share.0,
        quota,
    )
    .fetch_one(tx)
    .await
    .context("setting a share's quota slots")
}

/// The share behind a public link: the directory names its tenant
/// (`directory.share_links`), then the tenant's row.
pub async fn find_by_slug(pool: &PgPool, slug: &str) -> anyhow::Result<Option<Share>> {
    sqlx::query_as!(
        Share,
        r#"SELECT s.tenant_id AS "tenant_id: TenantId", s.id AS "id: ShareId", s.slug, s.title,
                  s.description, s.status AS "status: ShareStatus", s.valid_from, s.valid_until,
                  s.per_learner_limit, s.quota, s.access_days, s.foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = s.tenant_id AND q.share_id = s.id) AS "quota_used!"
           FROM directory.share_links d
           JOIN shares s ON s.tenant_id = d.tenant_id AND s.slug = d.slug
           WHERE d.slug = $1"#,
        slug,
    )
    .fetch_optional(pool)
    .await
    .context("reading a share by slug")
}

/// A share by id, looked up only among the tenants `among` (those the
/// caller names or belongs to; callers then authorise against its
/// `tenant_id`): an id never leads into another tenant's rows.
pub async fn get_among(
    pool: &PgPool,
    among: &[TenantId],
    share: ShareId,
) -> anyhow::Result<Option<Share>> {
    let among: Vec<Uuid> = among.iter().map(|t| t.0).collect();
    sqlx::query_as!(
        Share,
        r#"SELECT tenant_id AS "tenant_id: TenantId", id AS "id: ShareId", slug, title, description,
                     status AS "status: ShareStatus", valid_from, valid_until,
                  per_learner_limit, quota, access_days, foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = shares.tenant_id AND q.share_id = shares.id) AS "quota_used!"
           FROM shares WHERE tenant_id = ANY($1) AND id = $2"#,
        &among,
        share.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a share")
}

/// The share `share` of `tenant`, if it is one: an admin's request reaches
/// only its own tenant's rows, so a share of another tenant is `None`, like
/// one that does not exist (ids are not secrets, but tenants stay apart).
pub async fn get_in(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
) -> anyhow::Result<Option<Share>> {
    sqlx::query_as!(
        Share,
        r#"SELECT tenant_id AS "tenant_id: TenantId", id AS "id: ShareId", slug, title, description,
                     status AS "status: ShareStatus", valid_from, valid_until,
                  per_learner_limit, quota, access_days, foreign_codes,
                  (SELECT coalesce(sum(q.used), 0)::integer FROM share_quota_slots q
                   WHERE q.tenant_id = shares.tenant_id AND q.share_id = shares.id) AS "quota_used!"
           FROM shares WHERE tenant_id = $1 AND id = $2"#,
        tenant.0,
        share.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a share")
}

/// Changes a share's status (audited).
pub async fn set_status(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    status: ShareStatus,
) -> Result<(), ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let updated = sqlx::query!(
        "UPDATE shares SET status = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        share.0,
        status.as_str(),
    )
    .execute(&mut *tx)
    .await
    .context("updating a share's status")?;
    if updated.rows_affected() == 0 {
        return Err(ShareError::ShareNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "share.status_changed",
        ("share", share.0),
        json!({ "status": status.as_str() }),
    )
    .await?;
    tx.commit().await.context("committing the status")?;
    Ok(())
}
