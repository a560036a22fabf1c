//! Shares (a published course), their resources, code batches and the
//! admin actions on codes (revoke, audited unbind).
//!
//! Every function takes the tenant explicitly and every query filters by it:
//! an admin's request can only ever reach rows of the tenant the caller was
//! authorised for.

use anyhow::Context as _;
pub use model::Unavailability;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    codes::{Keyring, PlainCode},
    progress::Progress,
    tenants::TenantId,
};

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
    #[error("a code's state is one of unused, bound, revoked")]
    InvalidCodeState,
    #[error("no such resource")]
    ResourceNotFound,
    #[error("only an unused code can be replaced (unbind or revoke the others)")]
    CodeNotReplaceable,
    #[error("{used} accesses are already counted: the total limit cannot be lower")]
    QuotaBelowUse { used: i64 },
    #[error("a learner already used {used} accesses: the per-learner limit cannot be lower")]
    LearnerLimitBelowUse { used: i64 },
    #[error(
        "codes were issued with this link: it cannot change (printed cards and sent links would break)"
    )]
    SlugLocked,
    #[error(
        "learners have opened this resource {accesses} times; tick \"remove anyway\" to remove it"
    )]
    ResourceInUse { accesses: i64 },
    #[error("limits are whole numbers from 1 to 1,000,000,000")]
    InvalidLimit,
    #[error("the validity window must end after it starts")]
    InvalidWindow,
    #[error("a batch has 1 to 100,000 codes")]
    InvalidCount,
    #[error("a batch label has at most 120 characters")]
    InvalidLabel,
    #[error("a reason is required (1 to 500 characters)")]
    InvalidReason,
    #[error(
        "this batch was already issued as {batch_id} ({count} codes); its codes were shown once, when it was created"
    )]
    BatchAlreadyIssued { batch_id: Uuid, count: i32 },
    #[error("this Idempotency-Key was already used for another request")]
    IdempotencyKeyReused,
    #[error("no such share")]
    ShareNotFound,
    #[error("no such code")]
    CodeNotFound,
    #[error("this code is not bound to anyone")]
    CodeNotBound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ShareId(pub Uuid);

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShareStatus {
    Draft,
    Active,
    Paused,
    Archived,
}

impl ShareStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Archived => "archived",
        }
    }

    pub fn parse(raw: &str) -> Result<Self, ShareError> {
        match raw.trim() {
            "draft" => Ok(Self::Draft),
            "active" => Ok(Self::Active),
            "paused" => Ok(Self::Paused),
            "archived" => Ok(Self::Archived),
            _ => Err(ShareError::InvalidStatus),
        }
    }
}

/// The public link name of a share (`/s/<slug>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareSlug(String);

impl ShareSlug {
    pub fn parse(raw: &str) -> Result<Self, ShareError> {
        let slug = raw.trim();
        let ok = (1..=64).contains(&slug.len())
            && slug
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !slug.starts_with('-')
            && !slug.ends_with('-');
        ok.then(|| Self(slug.to_owned()))
            .ok_or(ShareError::InvalidSlug)
    }

    /// A slug made from a title, with a random suffix against collisions.
    pub fn from_title(title: &str) -> Self {
        let mut base: String = title
            .to_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        while base.contains("--") {
            base = base.replace("--", "-");
        }
        let base = base.trim_matches('-');
        let base: String = base.chars().take(48).collect();
        let base = base.trim_matches('-');
        let suffix = &Uuid::new_v4().simple().to_string()[..6];
        if base.is_empty() {
            Self(format!("course-{suffix}"))
        } else {
            Self(format!("{base}-{suffix}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an admin sends to create a share (all optional but the title).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[derive(utoipa::ToSchema)]
pub struct ShareInput {
    pub title: String,
    pub slug: Option<String>,
    pub description: Option<String>,
    pub status: Option<String>,
    pub per_learner_limit: Option<i64>,
    pub quota: Option<i64>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub valid_from: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub valid_until: Option<OffsetDateTime>,
}

/// A parsed, valid new share.
#[derive(Debug, Clone)]
pub struct NewShare {
    pub title: String,
    pub slug: ShareSlug,
    pub description: String,
    pub status: ShareStatus,
    pub per_learner_limit: Option<i32>,
    pub quota: Option<i32>,
    pub valid_from: Option<OffsetDateTime>,
    pub valid_until: Option<OffsetDateTime>,
}

fn parse_limit(raw: Option<i64>) -> Result<Option<i32>, ShareError> {
    match raw {
        None => Ok(None),
        Some(n) if (1..=1_000_000_000).contains(&n) => Ok(Some(
            i32::try_from(n).map_err(|_| ShareError::InvalidLimit)?,
        )),
        Some(_) => Err(ShareError::InvalidLimit),
    }
}

impl NewShare {
    pub fn parse(input: ShareInput) -> Result<Self, ShareError> {
        let title = input.title.trim().to_owned();
        if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
            return Err(ShareError::InvalidTitle);
        }
        let slug = match input.slug.as_deref().map(str::trim) {
            Some(slug) if !slug.is_empty() => ShareSlug::parse(slug)?,
            _ => ShareSlug::from_title(&title),
        };
        let description = input.description.unwrap_or_default();
        if description.chars().count() > 10_000 {
            return Err(ShareError::InvalidDescription);
        }
        let status = match input.status.as_deref() {
            Some(s) => ShareStatus::parse(s)?,
            None => ShareStatus::Draft,
        };
        if let (Some(from), Some(until)) = (input.valid_from, input.valid_until)
            && from >= until
        {
            return Err(ShareError::InvalidWindow);
        }
        Ok(Self {
            title,
            slug,
            description,
            status,
            per_learner_limit: parse_limit(input.per_learner_limit)?,
            quota: parse_limit(input.quota)?,
            valid_from: input.valid_from,
            valid_until: input.valid_until,
        })
    }
}

/// A share as stored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Share {
    pub tenant_id: Uuid,
    pub id: Uuid,
    pub slug: String,
    pub title: String,
    pub description: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339::option")]
    pub valid_from: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub valid_until: Option<OffsetDateTime>,
    pub per_learner_limit: Option<i32>,
    pub quota: Option<i32>,
    pub quota_used: i32,
}

impl Share {
    pub fn tenant(&self) -> TenantId {
        TenantId(self.tenant_id)
    }

    /// Why learners cannot use the share now, if they cannot (its state
    /// and window; the quota is `unavailable_to_newcomers`).
    pub fn unavailable_because(&self, now: OffsetDateTime) -> Option<Unavailability> {
        if self.status != "active" {
            return Some(match self.status.as_str() {
                "paused" => Unavailability::Paused,
                _ => Unavailability::NotAvailable,
            });
        }
        if self.valid_from.is_some_and(|from| now < from) {
            return Some(Unavailability::NotOpenYet);
        }
        if self.valid_until.is_some_and(|until| now >= until) {
            return Some(Unavailability::Closed);
        }
        None
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
                               per_learner_limit, quota, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (slug) DO NOTHING
           RETURNING tenant_id, id, slug, title, description, status, valid_from, valid_until,
                     per_learner_limit, quota, quota_used"#,
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
    )
    .fetch_optional(&mut *tx)
    .await
    .context("inserting a share")?
    .ok_or(ShareError::SlugTaken)?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "share.created",
        ("share", share.id),
        json!({ "slug": share.slug, "title": share.title, "status": share.status }),
    )
    .await?;
    tx.commit().await.context("committing the share")?;
    Ok(share)
}

/// Changes a share's settings (audited with the fields that changed).
pub async fn update_share(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    new: NewShare,
) -> Result<Share, ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let before = sqlx::query_as!(
        Share,
        r#"SELECT tenant_id, id, slug, title, description, status, valid_from, valid_until,
                  per_learner_limit, quota, quota_used
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
    if new.quota.is_some_and(|quota| quota < before.quota_used) {
        return Err(ShareError::QuotaBelowUse {
            used: i64::from(before.quota_used),
        });
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
    if new.slug.as_str() != before.slug && usage.codes > 0 {
        return Err(ShareError::SlugLocked);
    }
    let updated = sqlx::query_as!(
        Share,
        r#"UPDATE shares
           SET slug = $3, title = $4, description = $5, status = $6, valid_from = $7,
               valid_until = $8, per_learner_limit = $9, quota = $10, updated_at = now()
           WHERE tenant_id = $1 AND id = $2
           RETURNING tenant_id, id, slug, title, description, status, valid_from, valid_until,
                     per_learner_limit, quota, quota_used"#,
        tenant.0,
        share.0,
        new.slug.as_str(),
        new.title,
        new.description,
        new.status.as_str(),
        new.valid_from,
        new.valid_until,
        new.per_learner_limit,
        new.quota,
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

/// The share behind a public link.
pub async fn find_by_slug(pool: &PgPool, slug: &str) -> anyhow::Result<Option<Share>> {
    sqlx::query_as!(
        Share,
        r#"SELECT tenant_id, id, slug, title, description, status, valid_from, valid_until,
                  per_learner_limit, quota, quota_used
           FROM shares WHERE slug = $1"#,
        slug,
    )
    .fetch_optional(pool)
    .await
    .context("reading a share by slug")
}

/// A share by id (any tenant: callers authorise against `tenant_id`).
pub async fn get(pool: &PgPool, share: ShareId) -> anyhow::Result<Option<Share>> {
    sqlx::query_as!(
        Share,
        r#"SELECT tenant_id, id, slug, title, description, status, valid_from, valid_until,
                  per_learner_limit, quota, quota_used
           FROM shares WHERE id = $1"#,
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

/// A resource of a share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Resource {
    pub id: Uuid,
    pub share_id: Uuid,
    pub kind: String,
    pub title: String,
    pub content_type: String,
    pub size_bytes: i64,
    #[serde(skip)]
    pub storage_key: String,
    pub position: i32,
}

/// What kind of content a resource is, from its content type.
pub fn kind_of(content_type: &str) -> &'static str {
    if content_type.starts_with("video/") {
        "video"
    } else if content_type.starts_with("text/html") || content_type.starts_with("text/markdown") {
        "page"
    } else {
        "file"
    }
}

/// Records an uploaded resource (its bytes are already stored).
#[expect(clippy::too_many_arguments, reason = "one row's columns")]
pub async fn add_resource(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    id: Uuid,
    title: &str,
    content_type: &str,
    size_bytes: i64,
    storage_key: &str,
) -> Result<Resource, ShareError> {
    let title = title.trim();
    if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
        return Err(ShareError::InvalidTitle);
    }
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let resource = sqlx::query_as!(
        Resource,
        r#"INSERT INTO resources (tenant_id, id, share_id, kind, title, content_type, size_bytes, storage_key, position)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8,
                  coalesce((SELECT max(position) + 1 FROM resources
                            WHERE tenant_id = $1 AND share_id = $3 AND deleted_at IS NULL), 0)
           WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $3)
           RETURNING id, share_id, kind, title, content_type, size_bytes, storage_key, position"#,
        tenant.0,
        id,
        share.0,
        kind_of(content_type),
        title,
        content_type,
        size_bytes,
        storage_key,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("inserting a resource")?
    .ok_or(ShareError::ShareNotFound)?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "resource.uploaded",
        ("resource", resource.id),
        json!({ "share_id": share.0, "title": resource.title, "size_bytes": size_bytes }),
    )
    .await?;
    tx.commit().await.context("committing the resource")?;
    Ok(resource)
}

/// The resources of a share, in order.
pub async fn resources(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
) -> anyhow::Result<Vec<Resource>> {
    sqlx::query_as!(
        Resource,
        "SELECT id, share_id, kind, title, content_type, size_bytes, storage_key, position
         FROM resources WHERE tenant_id = $1 AND share_id = $2 AND deleted_at IS NULL
         ORDER BY position, id",
        tenant.0,
        share.0,
    )
    .fetch_all(pool)
    .await
    .context("listing resources")
}

/// One resource of a share.
pub async fn resource(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    id: Uuid,
) -> anyhow::Result<Option<Resource>> {
    sqlx::query_as!(
        Resource,
        "SELECT id, share_id, kind, title, content_type, size_bytes, storage_key, position
         FROM resources WHERE tenant_id = $1 AND share_id = $2 AND id = $3 AND deleted_at IS NULL",
        tenant.0,
        share.0,
        id,
    )
    .fetch_optional(pool)
    .await
    .context("reading a resource")
}

/// Renames a resource (audited).
pub async fn rename_resource(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    resource: Uuid,
    title: &str,
) -> Result<(), ShareError> {
    let title = title.trim();
    if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
        return Err(ShareError::InvalidTitle);
    }
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let updated = sqlx::query!(
        "UPDATE resources SET title = $4
         WHERE tenant_id = $1 AND share_id = $2 AND id = $3 AND deleted_at IS NULL",
        tenant.0,
        share.0,
        resource,
        title,
    )
    .execute(&mut *tx)
    .await
    .context("renaming a resource")?;
    if updated.rows_affected() == 0 {
        return Err(ShareError::ResourceNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "resource.renamed",
        ("resource", resource),
        json!({ "share_id": share.0, "title": title }),
    )
    .await?;
    tx.commit().await.context("committing the rename")?;
    Ok(())
}

/// Moves a resource one place up (`-1`) or down (`1`) in its share's list.
pub async fn move_resource(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    resource: Uuid,
    step: i32,
) -> Result<(), ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // Renumber in the current order, then swap with the neighbour: robust
    // to gaps and ties left by older rows.
    let order: Vec<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM resources WHERE tenant_id = $1 AND share_id = $2 AND deleted_at IS NULL
         ORDER BY position, id FOR UPDATE",
        tenant.0,
        share.0,
    )
    .fetch_all(&mut *tx)
    .await
    .context("locking a share's resources")?;
    let from = order
        .iter()
        .position(|id| *id == resource)
        .ok_or(ShareError::ResourceNotFound)?;
    let to = match step {
        -1 => from.checked_sub(1),
        1 => Some(from + 1).filter(|to| *to < order.len()),
        _ => None,
    };
    let Some(to) = to else {
        return Ok(());
    };
    let mut order = order;
    order.swap(from, to);
    let positions: Vec<i32> = (0..i32::try_from(order.len()).unwrap_or(i32::MAX)).collect();
    sqlx::query!(
        "UPDATE resources r SET position = o.position
         FROM UNNEST($3::uuid[], $4::int[]) AS o(id, position)
         WHERE r.tenant_id = $1 AND r.share_id = $2 AND r.id = o.id",
        tenant.0,
        share.0,
        &order,
        &positions,
    )
    .execute(&mut *tx)
    .await
    .context("reordering resources")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "resource.moved",
        ("resource", resource),
        json!({ "share_id": share.0, "position": to }),
    )
    .await?;
    tx.commit().await.context("committing the order")?;
    Ok(())
}

/// Removes a resource from its share. Refused once learners have opened it
/// unless `force`; its row stays (access records point at it), only the
/// returned storage key's bytes may go once this has committed.
pub async fn delete_resource(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    share: ShareId,
    resource: Uuid,
    force: bool,
) -> Result<String, ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let row = sqlx::query!(
        "SELECT storage_key, title FROM resources
         WHERE tenant_id = $1 AND share_id = $2 AND id = $3 AND deleted_at IS NULL FOR UPDATE",
        tenant.0,
        share.0,
        resource,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking a resource")?
    .ok_or(ShareError::ResourceNotFound)?;
    let accesses = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM access_records WHERE tenant_id = $1 AND resource_id = $2"#,
        tenant.0,
        resource,
    )
    .fetch_one(&mut *tx)
    .await
    .context("counting a resource's accesses")?;
    if accesses > 0 && !force {
        return Err(ShareError::ResourceInUse { accesses });
    }
    sqlx::query!(
        "UPDATE resources SET deleted_at = now() WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        resource,
    )
    .execute(&mut *tx)
    .await
    .context("removing a resource")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "resource.deleted",
        ("resource", resource),
        json!({ "share_id": share.0, "title": row.title, "accesses": accesses, "forced": force }),
    )
    .await?;
    tx.commit().await.context("committing the removal")?;
    Ok(row.storage_key)
}

/// A freshly issued batch: the plain codes exist only in this value.
#[derive(Debug)]
pub struct IssuedBatch {
    pub batch_id: Uuid,
    pub codes: Vec<(Uuid, PlainCode)>,
}

/// Rows per INSERT statement when issuing codes.
const INSERT_CHUNK: usize = 5_000;

/// Issues `count` new codes for a share in one transaction: multi-row
/// inserts (`UNNEST`) of digests, never the plain codes.
/// What an admin asks for when issuing codes.
#[derive(Debug, Clone)]
pub struct BatchRequest<'a> {
    pub share: ShareId,
    pub count: i64,
    pub label: &'a str,
    /// The caller's `Idempotency-Key`: a retry of the same request issues
    /// nothing new (`BatchAlreadyIssued`).
    pub idempotency_key: Option<&'a str>,
    /// Where to report how many codes are written so far (a page shows it).
    pub progress: Option<&'a Progress>,
}

pub async fn issue_codes(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    request: &BatchRequest<'_>,
) -> Result<IssuedBatch, ShareError> {
    let (share, count, label) = (request.share, request.count, request.label);
    let count = usize::try_from(count)
        .ok()
        .filter(|n| (1..=100_000).contains(n))
        .ok_or(ShareError::InvalidCount)?;
    let label = label.trim();
    if label.chars().count() > 120 || label.chars().any(char::is_control) {
        return Err(ShareError::InvalidLabel);
    }
    let codes: Vec<(Uuid, PlainCode)> = (0..count)
        .map(|_| (Uuid::now_v7(), PlainCode::generate()))
        .collect();
    let batch_id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    if let Some(key) = request.idempotency_key {
        let response =
            json!({ "batch_id": batch_id, "count": count, "share_id": share.0, "label": label });
        let claimed = sqlx::query_scalar!(
            "INSERT INTO idempotency_records (tenant_id, key, principal_id, operation, response)
             VALUES ($1, $2, $3, 'issue_codes', $4)
             ON CONFLICT (tenant_id, key) DO NOTHING RETURNING key",
            tenant.0,
            key,
            actor.0,
            response,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("claiming the idempotency key")?;
        if claimed.is_none() {
            drop(tx);
            let earlier = sqlx::query!(
                "SELECT principal_id, operation, response FROM idempotency_records WHERE tenant_id = $1 AND key = $2",
                tenant.0,
                key,
            )
            .fetch_one(pool)
            .await
            .context("reading the earlier request")?;
            // The same request: same admin, share, count and label (a key
            // sent again with other values is a different request).
            let same = earlier.principal_id == actor.0
                && earlier.operation == "issue_codes"
                && earlier.response["share_id"] == json!(share.0)
                && earlier.response["count"] == json!(count)
                && earlier.response["label"] == json!(label);
            if !same {
                return Err(ShareError::IdempotencyKeyReused);
            }
            return Err(ShareError::BatchAlreadyIssued {
                batch_id: serde_json::from_value(earlier.response["batch_id"].clone())
                    .context("reading the earlier batch id")?,
                count: serde_json::from_value(earlier.response["count"].clone())
                    .context("reading the earlier batch size")?,
            });
        }
    }
    let inserted = sqlx::query!(
        "INSERT INTO code_batches (tenant_id, id, share_id, label, count, created_by)
         SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $3)",
        tenant.0,
        batch_id,
        share.0,
        label,
        i32::try_from(count).map_err(|_| ShareError::InvalidCount)?,
        actor.0,
    )
    .execute(&mut *tx)
    .await
    .context("inserting a code batch")?;
    if inserted.rows_affected() == 0 {
        return Err(ShareError::ShareNotFound);
    }
    let total = codes.len() as u64;
    let mut done = 0;
    for chunk in codes.chunks(INSERT_CHUNK) {
        let mut ids = Vec::with_capacity(chunk.len());
        let mut digests = Vec::with_capacity(chunk.len());
        let mut versions = Vec::with_capacity(chunk.len());
        let mut hints = Vec::with_capacity(chunk.len());
        for (id, code) in chunk {
            let (version, digest) = keyring.digest(code);
            ids.push(*id);
            digests.push(digest);
            versions.push(i16::try_from(version).context("key version above 32767")?);
            hints.push(code.hint());
        }
        sqlx::query!(
            "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
             SELECT $1, id, $2, $3, digest, version, hint
             FROM UNNEST($4::uuid[], $5::bytea[], $6::smallint[], $7::text[]) AS c(id, digest, version, hint)",
            tenant.0,
            share.0,
            batch_id,
            &ids,
            &digests,
            &versions,
            &hints,
        )
        .execute(&mut *tx)
        .await
        .context("inserting codes")?;
        done += chunk.len() as u64;
        if let Some(progress) = request.progress
            && done < total
        {
            progress.report(done, total).await;
        }
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.issued",
        ("code_batch", batch_id),
        json!({ "share_id": share.0, "count": count, "label": label }),
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "batch.issued",
        json!({ "share_id": share.0, "batch_id": batch_id, "count": count }),
    )
    .await?;
    tx.commit().await.context("committing the batch")?;
    if let Some(progress) = request.progress {
        progress.report(total, total).await;
    }
    Ok(IssuedBatch { batch_id, codes })
}

/// Frees an issuing request's idempotency key after its batch was revoked
/// unseen (the codes could not be handed over): a retry with the same key
/// then issues a new batch instead of pointing at the revoked one.
pub async fn release_issue_key(pool: &PgPool, tenant: TenantId, key: &str) -> anyhow::Result<()> {
    sqlx::query!(
        "DELETE FROM idempotency_records WHERE tenant_id = $1 AND key = $2 AND operation = 'issue_codes'",
        tenant.0,
        key,
    )
    .execute(pool)
    .await
    .context("releasing an idempotency key")?;
    Ok(())
}

/// A code as admins see it (never the plain code).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct CodeView {
    pub id: Uuid,
    pub batch_id: Uuid,
    pub hint: String,
    pub state: String,
    pub bound_email: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub first_used_at: Option<OffsetDateTime>,
    pub access_count: i32,
}

/// Which codes of a share to list.
#[derive(Debug, Clone, Default)]
pub struct CodeFilter {
    /// `unused`, `bound` or `revoked`.
    pub state: Option<CodeState>,
    pub batch: Option<Uuid>,
    /// Part of a hint (`AB…YZ`, `AB`, `YZ`) or of the bound learner's email.
    pub search: Option<String>,
}

/// A code's state as admins filter by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeState {
    Unused,
    Bound,
    Revoked,
}

impl CodeState {
    pub fn parse(raw: &str) -> Result<Self, ShareError> {
        match raw {
            "unused" => Ok(Self::Unused),
            "bound" => Ok(Self::Bound),
            "revoked" => Ok(Self::Revoked),
            _ => Err(ShareError::InvalidCodeState),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unused => "unused",
            Self::Bound => "bound",
            Self::Revoked => "revoked",
        }
    }
}

/// A page of a share's codes in id order (keyset pagination: `after` is the
/// last id of the previous page), so it stays fast at 100,000 codes.
pub async fn list_codes(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    filter: &CodeFilter,
    after: Option<Uuid>,
    limit: i64,
) -> anyhow::Result<Vec<CodeView>> {
    let search = filter
        .search
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            // LIKE metacharacters are literal here.
            let escaped = s
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            format!("%{escaped}%")
        });
    sqlx::query_as!(
        CodeView,
        r#"SELECT c.id, c.batch_id, c.hint,
                  CASE WHEN c.revoked_at IS NOT NULL THEN 'revoked'
                       WHEN c.bound_principal IS NOT NULL THEN 'bound'
                       ELSE 'unused' END AS "state!",
                  a.email AS "bound_email?", c.first_used_at, c.access_count
           FROM auth_codes c LEFT JOIN accounts a ON a.id = c.bound_principal
           WHERE c.tenant_id = $1 AND c.share_id = $2 AND ($3::uuid IS NULL OR c.id > $3)
             AND ($5::text IS NULL
                  OR ($5 = 'revoked' AND c.revoked_at IS NOT NULL)
                  OR ($5 = 'bound' AND c.revoked_at IS NULL AND c.bound_principal IS NOT NULL)
                  OR ($5 = 'unused' AND c.revoked_at IS NULL AND c.bound_principal IS NULL))
             AND ($6::uuid IS NULL OR c.batch_id = $6)
             AND ($7::text IS NULL OR c.hint ILIKE $7 OR a.email ILIKE $7)
           ORDER BY c.id
           LIMIT $4"#,
        tenant.0,
        share.0,
        after,
        limit.clamp(1, 1_000),
        filter.state.map(CodeState::as_str),
        filter.batch,
        search,
    )
    .fetch_all(pool)
    .await
    .context("listing codes")
}

/// The share a code belongs to (for authorising by code id).
pub async fn share_of_code(
    pool: &PgPool,
    code: Uuid,
) -> anyhow::Result<Option<(TenantId, ShareId)>> {
    let row = sqlx::query!(
        "SELECT tenant_id, share_id FROM auth_codes WHERE id = $1",
        code
    )
    .fetch_optional(pool)
    .await
    .context("reading a code's share")?;
    Ok(row.map(|r| (TenantId(r.tenant_id), ShareId(r.share_id))))
}

/// Ends every live grant made through `code`: its learner loses access now.
async fn end_live_grants(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE access_records SET expires_at = now() WHERE tenant_id = $1 AND code_id = $2 AND expires_at > now()",
        tenant.0,
        code,
    )
    .execute(conn)
    .await
    .context("ending the code's live grants")?;
    Ok(())
}

/// Revokes a code: it can no longer be bound, and a learner bound to it
/// loses access (audited). Revoking a revoked code changes nothing.
pub async fn revoke_code(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<(), ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let row = sqlx::query!(
        r#"UPDATE auth_codes SET revoked_at = coalesce(revoked_at, now())
           WHERE tenant_id = $1 AND id = $2
           RETURNING share_id, bound_principal"#,
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("revoking a code")?
    .ok_or(ShareError::CodeNotFound)?;
    end_live_grants(&mut tx, tenant, code).await?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "code.revoked",
        ("code", code),
        json!({ "share_id": row.share_id, "bound_principal": row.bound_principal }),
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "code.revoked",
        json!({ "share_id": row.share_id, "code_id": code }),
    )
    .await?;
    tx.commit().await.context("committing the revocation")?;
    Ok(())
}

/// Replaces a lost, unused code: revokes it and issues one new code in the
/// same batch, atomically (both or neither). Returns the new code, which
/// exists in plain only in this value.
pub async fn replace_code(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<(Uuid, PlainCode), ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let old = sqlx::query!(
        "SELECT share_id, batch_id, bound_principal, revoked_at FROM auth_codes
         WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(ShareError::CodeNotFound)?;
    if old.bound_principal.is_some() || old.revoked_at.is_some() {
        return Err(ShareError::CodeNotReplaceable);
    }
    sqlx::query!(
        "UPDATE auth_codes SET revoked_at = now() WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        code,
    )
    .execute(&mut *tx)
    .await
    .context("revoking the lost code")?;
    let new_id = Uuid::now_v7();
    let plain = PlainCode::generate();
    let (version, digest) = keyring.digest(&plain);
    sqlx::query!(
        "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        tenant.0,
        new_id,
        old.share_id,
        old.batch_id,
        digest,
        i16::try_from(version).context("key version above 32767")?,
        plain.hint(),
    )
    .execute(&mut *tx)
    .await
    .context("inserting the replacement")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "code.replaced",
        ("code", code),
        json!({ "share_id": old.share_id, "replacement": new_id }),
    )
    .await?;
    tx.commit().await.context("committing the replacement")?;
    Ok((new_id, plain))
}

/// Revokes every unused code of a batch (a batch handed to the wrong
/// class, or never delivered); bound codes keep their learners. Audited;
/// returns how many were revoked.
pub async fn revoke_unused_of_batch(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    batch: Uuid,
) -> Result<u64, ShareError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let share = sqlx::query_scalar!(
        "SELECT share_id FROM code_batches WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        batch,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding a batch")?
    .ok_or(ShareError::CodeNotFound)?;
    let revoked = sqlx::query!(
        r#"UPDATE auth_codes SET revoked_at = now()
           WHERE tenant_id = $1 AND batch_id = $2 AND revoked_at IS NULL AND bound_principal IS NULL"#,
        tenant.0,
        batch,
    )
    .execute(&mut *tx)
    .await
    .context("revoking a batch's unused codes")?
    .rows_affected();
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.unused_revoked",
        ("code_batch", batch),
        json!({ "share_id": share, "revoked": revoked }),
    )
    .await?;
    tx.commit()
        .await
        .context("committing the batch revocation")?;
    Ok(revoked)
}

/// Unbinds a bound code (the learner changed account): the learner loses
/// access at once; the code becomes usable again, or stays revoked when
/// `revoke` is set. The only path that may change a binding (see the
/// `auth_codes_keep_binding` trigger); audited with its reason. Returns the
/// code's state afterwards (`unused` or `revoked`).
pub async fn unbind_code(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    reason: &str,
    revoke: bool,
) -> Result<&'static str, ShareError> {
    let reason = reason.trim();
    if !(1..=500).contains(&reason.chars().count()) {
        return Err(ShareError::InvalidReason);
    }
    let mut tx = pool.begin().await.context("starting a transaction")?;
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(&mut *tx)
        .await
        .context("opening the unbind path")?;
    let before = sqlx::query!(
        "SELECT share_id, bound_principal FROM auth_codes WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(ShareError::CodeNotFound)?;
    let principal = before.bound_principal.ok_or(ShareError::CodeNotBound)?;
    let revoked = sqlx::query_scalar!(
        r#"UPDATE auth_codes
           SET bound_principal = NULL, first_used_at = NULL, access_count = 0,
               foreign_attempts = 0, last_foreign_attempt_at = NULL,
               revoked_at = CASE WHEN $3 THEN coalesce(revoked_at, now()) ELSE revoked_at END
           WHERE tenant_id = $1 AND id = $2
           RETURNING revoked_at IS NOT NULL AS "revoked!""#,
        tenant.0,
        code,
        revoke,
    )
    .fetch_one(&mut *tx)
    .await
    .context("unbinding the code")?;
    end_live_grants(&mut tx, tenant, code).await?;
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action: "code.unbound",
            target_type: "code",
            target_id: Some(code),
            reason: Some(reason),
            details: json!({ "share_id": before.share_id, "principal": principal, "revoked": revoke }),
        },
    )
    .await?;
    audit::emit(
        &mut tx,
        tenant,
        "code.unbound",
        json!({ "share_id": before.share_id, "code_id": code, "principal": principal }),
    )
    .await?;
    tx.commit().await.context("committing the unbind")?;
    Ok(if revoked { "revoked" } else { "unused" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_from_titles_are_valid() {
        for title in [
            "Rust for Beginners",
            "  ",
            "中文课程",
            "---",
            "A".repeat(300).as_str(),
        ] {
            let slug = ShareSlug::from_title(title);
            assert!(
                ShareSlug::parse(slug.as_str()).is_ok(),
                "{title:?} -> {slug:?}"
            );
        }
    }

    #[test]
    fn share_input_is_parsed_strictly() {
        let ok = |f: &dyn Fn(&mut ShareInput)| {
            let mut input = ShareInput {
                title: "Course".into(),
                ..Default::default()
            };
            f(&mut input);
            NewShare::parse(input)
        };
        assert!(ok(&|_| {}).is_ok());
        assert!(matches!(
            ok(&|i| i.title = "  ".into()),
            Err(ShareError::InvalidTitle)
        ));
        assert!(matches!(
            ok(&|i| i.title = "<b>x</b>\u{0}".into()),
            Err(ShareError::InvalidTitle)
        ));
        assert!(matches!(
            ok(&|i| i.slug = Some("Bad Slug".into())),
            Err(ShareError::InvalidSlug)
        ));
        assert!(matches!(
            ok(&|i| i.status = Some("live".into())),
            Err(ShareError::InvalidStatus)
        ));
        assert!(matches!(
            ok(&|i| i.quota = Some(0)),
            Err(ShareError::InvalidLimit)
        ));
        assert!(matches!(
            ok(&|i| i.per_learner_limit = Some(-3)),
            Err(ShareError::InvalidLimit)
        ));
        assert!(matches!(
            ok(&|i| {
                i.valid_from = Some(OffsetDateTime::now_utc());
                i.valid_until = Some(OffsetDateTime::now_utc() - time::Duration::hours(1));
            }),
            Err(ShareError::InvalidWindow)
        ));
    }
}
