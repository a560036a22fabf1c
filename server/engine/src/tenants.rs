//! Tenants: the course creators' workspaces, and who administers them.
//!
//! Every tenant-scoped row carries `tenant_id` first; an admin acts only
//! inside the tenants where `tenant_members` gives them the admin role.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use crate::accounts::AccountId;

#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    #[error(
        "a tenant slug is 1 to 48 lower-case letters, digits or dashes, not starting or ending with a dash"
    )]
    InvalidSlug,
    #[error("a tenant name needs 1 to 120 visible characters")]
    InvalidName,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

pub use model::TenantId;

/// A tenant's URL-safe slug (same rule as the database CHECK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantSlug(String);

impl TenantSlug {
    pub fn parse(raw: &str) -> Result<Self, TenantError> {
        let slug = raw.trim();
        let ok_chars = slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if (1..=48).contains(&slug.len())
            && ok_chars
            && !slug.starts_with('-')
            && !slug.ends_with('-')
        {
            Ok(Self(slug.to_owned()))
        } else {
            Err(TenantError::InvalidSlug)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A tenant's display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantName(String);

impl TenantName {
    pub fn parse(raw: &str) -> Result<Self, TenantError> {
        let name = raw.trim();
        if (1..=120).contains(&name.chars().count()) && !name.chars().any(char::is_control) {
            Ok(Self(name.to_owned()))
        } else {
            Err(TenantError::InvalidName)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Creates the tenant (or finds it by slug: idempotent) and makes `admin`
/// its administrator. Returns the tenant id and whether it was created.
pub async fn ensure_tenant_with_admin(
    pool: &PgPool,
    slug: &TenantSlug,
    name: &TenantName,
    admin: AccountId,
) -> Result<(TenantId, bool), TenantError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let inserted = sqlx::query_scalar!(
        "INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)
         ON CONFLICT (slug) DO NOTHING RETURNING id",
        Uuid::now_v7(),
        slug.as_str(),
        name.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("inserting a tenant")?;
    let (id, created) = match inserted {
        Some(id) => (id, true),
        None => (
            sqlx::query_scalar!("SELECT id FROM tenants WHERE slug = $1", slug.as_str())
                .fetch_one(&mut *tx)
                .await
                .context("reading an existing tenant")?,
            false,
        ),
    };
    sqlx::query!(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'admin')
         ON CONFLICT DO NOTHING",
        id,
        admin.0,
    )
    .execute(&mut *tx)
    .await
    .context("granting the admin role")?;
    tx.commit().await.context("committing the tenant")?;
    Ok((TenantId(id), created))
}

/// A tenant as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantSummary {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
    pub admins: i64,
}

/// The tenants `account` administers, by name.
pub async fn administered_by(
    pool: &PgPool,
    account: AccountId,
) -> anyhow::Result<Vec<TenantSummary>> {
    let rows = sqlx::query!(
        r#"SELECT t.id, t.slug, t.name,
                  (SELECT count(*) FROM tenant_members a WHERE a.tenant_id = t.id AND a.role = 'admin') AS "admins!"
           FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id
           WHERE m.account_id = $1 AND m.role = 'admin'
           ORDER BY t.name, t.id"#,
        account.0,
    )
    .fetch_all(pool)
    .await
    .context("listing administered tenants")?;
    Ok(rows
        .into_iter()
        .map(|r| TenantSummary {
            id: TenantId(r.id),
            slug: r.slug,
            name: r.name,
            admins: r.admins,
        })
        .collect())
}

/// One tenant's summary.
pub async fn summary(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Option<TenantSummary>> {
    let row = sqlx::query!(
        r#"SELECT t.id, t.slug, t.name,
                  (SELECT count(*) FROM tenant_members a WHERE a.tenant_id = t.id AND a.role = 'admin') AS "admins!"
           FROM tenants t WHERE t.id = $1"#,
        tenant.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a tenant")?;
    Ok(row.map(|r| TenantSummary {
        id: TenantId(r.id),
        slug: r.slug,
        name: r.name,
        admins: r.admins,
    }))
}

/// Whether `account` administers `tenant`.
pub async fn is_admin(pool: &PgPool, tenant: TenantId, account: AccountId) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
             SELECT 1 FROM tenant_members
             WHERE tenant_id = $1 AND account_id = $2 AND role = 'admin'
           ) AS "is_admin!""#,
        tenant.0,
        account.0,
    )
    .fetch_one(pool)
    .await
    .context("checking the admin role")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_database_rule() {
        assert!(TenantSlug::parse("demo").is_ok());
        assert!(TenantSlug::parse("acme-2").is_ok());
        for bad in ["", "-a", "a-", "Acme", "a_b", "a b", &"a".repeat(49)] {
            assert!(
                TenantSlug::parse(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(TenantName::parse(" Acme ").expect("valid").as_str(), "Acme");
        assert!(TenantName::parse("").is_err());
        assert!(TenantName::parse(&"x".repeat(121)).is_err());
    }
}
