//! Resources: the content of a share (videos, pages, files), in order.
//!
//! The rows only: the bytes live in [`crate::storage`], written before a
//! resource is recorded and removed only after its removal committed. A
//! resource learners have opened keeps its row (access records point at
//! it); it is marked removed. Its refusals are [`ResourceError`]; every query filters by the tenant passed in.
//!
//! A tenant's live resources (not removed) fit in its storage quota: its
//! own (`tenants.storage_quota_bytes`) or the configured one. The upload
//! that would pass it is refused when its row is recorded, counted under a
//! per-tenant lock so that parallel uploads never overfill it; its bytes
//! are then removed by the caller, as for any failed upload.

use anyhow::Context as _;
use model::ResourceKind;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{accounts::AccountId, audit, shares::ShareId, tenants::TenantId};

/// What refuses a change to a share's content.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    #[error("a title needs 1 to 200 visible characters")]
    InvalidTitle,
    #[error("no such resource")]
    ResourceNotFound,
    #[error(
        "learners have opened this resource {accesses} times; tick \"remove anyway\" to remove it"
    )]
    ResourceInUse { accesses: i64 },
    #[error("no such share")]
    ShareNotFound,
    #[error(
        "this file is larger than the {left} bytes left of this organisation's storage quota of \
         {quota} bytes; remove files or ask for a larger quota"
    )]
    StorageQuotaExceeded { left: i64, quota: i64 },
    #[error(
        "this organisation's storage quota of {quota} bytes is used up; remove files or ask for \
         a larger quota"
    )]
    StorageFull { quota: i64 },
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// A resource of a share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Resource {
    pub id: Uuid,
    pub share_id: Uuid,
    pub kind: ResourceKind,
    pub title: String,
    pub content_type: String,
    pub size_bytes: i64,
    #[serde(skip)]
    pub storage_key: String,
    pub position: i32,
}

/// A tenant's storage quota and what is left of it, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageUse {
    pub quota: i64,
    pub left: i64,
}

/// The tenant's storage quota (its own, else `default_quota`) and what its
/// live resources leave of it (negative when a quota was lowered below
/// what is stored).
pub async fn storage_use(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    default_quota: i64,
) -> anyhow::Result<StorageUse> {
    let row = sqlx::query!(
        r#"SELECT coalesce(t.storage_quota_bytes, $2) AS "quota!",
                  coalesce(t.storage_quota_bytes, $2)
                  - coalesce((SELECT sum(r.size_bytes) FROM resources r
                               WHERE r.tenant_id = t.id AND r.deleted_at IS NULL), 0)::bigint AS "left!"
             FROM tenants t WHERE t.id = $1"#,
        tenant.0,
        default_quota,
    )
    .fetch_one(conn)
    .await
    .context("reading the tenant's storage use")?;
    Ok(StorageUse {
        quota: row.quota,
        left: row.left,
    })
}

/// Records an uploaded resource (its bytes are already stored), if the
/// tenant's storage quota (its own, else `default_quota`) holds it.
#[expect(
    clippy::too_many_arguments,
    reason = "one row's columns, and the quota"
)]
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
    default_quota: i64,
) -> Result<Resource, ResourceError> {
    let title = title.trim();
    if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
        return Err(ResourceError::InvalidTitle);
    }
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // One upload of the tenant counts at a time, until it commits: two
    // that each fit alone never both pass.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(7301, hashtext($1::text))",
        tenant.0.to_string()
    )
    .execute(&mut *tx)
    .await
    .context("taking the tenant's storage lock")?;
    let storage = storage_use(&mut tx, tenant, default_quota).await?;
    if size_bytes > storage.left {
        return Err(ResourceError::StorageQuotaExceeded {
            left: storage.left.max(0),
            quota: storage.quota,
        });
    }
    let resource = sqlx::query_as!(
        Resource,
        r#"INSERT INTO resources (tenant_id, id, share_id, kind, title, content_type, size_bytes, storage_key, position)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8,
                  coalesce((SELECT max(position) + 1 FROM resources
                            WHERE tenant_id = $1 AND share_id = $3 AND deleted_at IS NULL), 0)
           WHERE EXISTS (SELECT 1 FROM shares WHERE tenant_id = $1 AND id = $3)
           RETURNING id, share_id, kind AS "kind: ResourceKind", title, content_type, size_bytes, storage_key, position"#,
        tenant.0,
        id,
        share.0,
        ResourceKind::of_content_type(content_type).as_str(),
        title,
        content_type,
        size_bytes,
        storage_key,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("inserting a resource")?
    .ok_or(ResourceError::ShareNotFound)?;
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
        r#"SELECT id, share_id, kind AS "kind: ResourceKind", title, content_type, size_bytes, storage_key, position
         FROM resources WHERE tenant_id = $1 AND share_id = $2 AND deleted_at IS NULL
         ORDER BY position, id"#,
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
        r#"SELECT id, share_id, kind AS "kind: ResourceKind", title, content_type, size_bytes, storage_key, position
         FROM resources WHERE tenant_id = $1 AND share_id = $2 AND id = $3 AND deleted_at IS NULL"#,
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
) -> Result<(), ResourceError> {
    let title = title.trim();
    if !(1..=200).contains(&title.chars().count()) || title.chars().any(char::is_control) {
        return Err(ResourceError::InvalidTitle);
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
        return Err(ResourceError::ResourceNotFound);
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
) -> Result<(), ResourceError> {
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
        .ok_or(ResourceError::ResourceNotFound)?;
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
) -> Result<String, ResourceError> {
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
    .ok_or(ResourceError::ResourceNotFound)?;
    let accesses = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM access_records WHERE tenant_id = $1 AND resource_id = $2"#,
        tenant.0,
        resource,
    )
    .fetch_one(&mut *tx)
    .await
    .context("counting a resource's accesses")?;
    if accesses > 0 && !force {
        return Err(ResourceError::ResourceInUse { accesses });
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
