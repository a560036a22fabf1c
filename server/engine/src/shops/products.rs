//! Which product of a shop sells which share: mapped and forgotten by a
//! creator (audited) and listed, and the courses a product can be mapped
//! to. (The intake finds a sale's share with its own query,
//! `intake::share_of`.)

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{ShopError, get};
use crate::{accounts::AccountId, audit, shares::ShareId, tenants::TenantId};

/// A product of a shop and the share it sells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    pub product_ref: String,
    pub share: ShareId,
    /// The share's title (the course a buyer gets).
    pub title: String,
}

fn check_product_ref(raw: &str) -> Result<String, ShopError> {
    let product = raw.trim();
    ((1..=200).contains(&product.chars().count()) && !product.chars().any(char::is_control))
        .then(|| product.to_owned())
        .ok_or(ShopError::InvalidProductRef)
}

/// Says that a shop's product sells `share` (replacing what it sold
/// before: later sales only; orders placed stay as they are).
pub async fn map_product(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
    product_ref: &str,
    share: ShareId,
) -> Result<Product, ShopError> {
    let product_ref = check_product_ref(product_ref)?;
    get(pool, tenant, id).await?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let title = sqlx::query_scalar!(
        "SELECT title FROM shares WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        share.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding a share")?
    .ok_or(ShopError::ShareNotFound)?;
    sqlx::query!(
        "INSERT INTO shop_products (tenant_id, integration_id, product_ref, share_id, created_by)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, integration_id, product_ref)
         DO UPDATE SET share_id = EXCLUDED.share_id, created_by = EXCLUDED.created_by,
                       created_at = now()",
        tenant.0,
        id,
        product_ref,
        share.0,
        actor.0,
    )
    .execute(&mut *tx)
    .await
    .context("mapping a product")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "shop.product_mapped",
        ("shop_integration", id),
        json!({ "product": product_ref, "share_id": share.0 }),
    )
    .await?;
    tx.commit().await.context("committing a product")?;
    Ok(Product {
        product_ref,
        share,
        title,
    })
}

/// Forgets a product: its later sales are refused as unknown.
pub async fn unmap_product(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
    product_ref: &str,
) -> Result<(), ShopError> {
    let product_ref = check_product_ref(product_ref)?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let removed = sqlx::query!(
        "DELETE FROM shop_products
         WHERE tenant_id = $1 AND integration_id = $2 AND product_ref = $3",
        tenant.0,
        id,
        product_ref,
    )
    .execute(&mut *tx)
    .await
    .context("unmapping a product")?;
    if removed.rows_affected() == 0 {
        return Err(ShopError::ProductNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "shop.product_unmapped",
        ("shop_integration", id),
        json!({ "product": product_ref }),
    )
    .await?;
    tx.commit().await.context("committing a product")?;
    Ok(())
}

/// A shop's products and their shares.
pub async fn products(
    pool: &PgPool,
    tenant: TenantId,
    id: Uuid,
) -> Result<Vec<Product>, ShopError> {
    get(pool, tenant, id).await?;
    let rows = sqlx::query!(
        "SELECT p.product_ref, p.share_id, s.title FROM shop_products p
         JOIN shares s ON s.tenant_id = p.tenant_id AND s.id = p.share_id
         WHERE p.tenant_id = $1 AND p.integration_id = $2 ORDER BY p.product_ref",
        tenant.0,
        id,
    )
    .fetch_all(pool)
    .await
    .context("listing products")?;
    Ok(rows
        .into_iter()
        .map(|r| Product {
            product_ref: r.product_ref,
            share: ShareId(r.share_id),
            title: r.title,
        })
        .collect())
}

/// A share a product can sell, as a form lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Course {
    pub share: ShareId,
    pub title: String,
    /// Its link name: two courses of one title told apart.
    pub slug: String,
    pub status: crate::shares::ShareStatus,
}

/// The most courses [`courses`] lists.
pub const COURSES_LISTED: i64 = 1000;

/// The tenant's shares a product can be mapped to, by title (at most
/// [`COURSES_LISTED`]; a tenant with more maps the rest through the API).
pub async fn courses(pool: &PgPool, tenant: TenantId) -> Result<Vec<Course>, ShopError> {
    let rows = sqlx::query!(
        r#"SELECT id, title, slug, status AS "status: crate::shares::ShareStatus"
           FROM shares WHERE tenant_id = $1 ORDER BY lower(title), slug LIMIT $2"#,
        tenant.0,
        COURSES_LISTED,
    )
    .fetch_all(pool)
    .await
    .context("listing the courses a product can sell")?;
    Ok(rows
        .into_iter()
        .map(|r| Course {
            share: ShareId(r.id),
            title: r.title,
            slug: r.slug,
            status: r.status,
        })
        .collect())
}
