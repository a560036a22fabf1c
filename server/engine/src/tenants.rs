//! Tenants: the course creators' workspaces, their members' roles, and
//! their settings.
//!
//! Every tenant-scoped row carries `tenant_id` first; a member acts only
//! inside the tenants where `tenant_members` gives them a role, and only as
//! far as the role allows ([`Role::allows`]). The team itself (invitations,
//! role changes, the last-owner rule) is [`crate::team`]'s.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use crate::{accounts::AccountId, audit};
pub use model::{Permission, Role};

#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    #[error(
        "a tenant slug is 1 to 48 lower-case letters, digits or dashes, not starting or ending with a dash"
    )]
    InvalidSlug,
    #[error("a tenant name needs 1 to 120 visible characters")]
    InvalidName,
    #[error("this tenant address is taken; choose another")]
    SlugTaken,
    #[error(transparent)]
    UnknownTimeZone(#[from] crate::zone::UnknownZone),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

pub use model::TenantId;

use crate::zone::Zone;

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
        // No control characters, and none of the invisible ones that
        // reorder or hide text (bidi overrides, zero-width): the name is
        // shown to learners and heads the tenant's mails.
        let invisible = |c: char| {
            c.is_control()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
        };
        if (1..=120).contains(&name.chars().count()) && !name.chars().any(invisible) {
            Ok(Self(name.to_owned()))
        } else {
            Err(TenantError::InvalidName)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Creates the tenant and makes `owner` its owner, or, when the slug is
/// taken, finds it: idempotent for its owner only. A tenant that exists
/// and that `owner` does not own is refused ([`TenantError::SlugTaken`]),
/// nothing written: with tenant signup, a stranger may have claimed the
/// slug. Returns the tenant id and whether it was created.
pub async fn ensure_tenant_with_owner(
    pool: &PgPool,
    slug: &TenantSlug,
    name: &TenantName,
    owner: AccountId,
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
    let Some(id) = inserted else {
        // Taken: this command again for the tenant's own owner, or someone
        // else's tenant (refused, the transaction rolls back).
        let owned = sqlx::query_scalar!(
            r#"SELECT t.id FROM tenants t
               JOIN tenant_members m ON m.tenant_id = t.id AND m.account_id = $2 AND m.role = 'owner'
               WHERE t.slug = $1"#,
            slug.as_str(),
            owner.0,
        )
        .fetch_optional(&mut *tx)
        .await
        .context("reading an existing tenant")?;
        return owned
            .map(|id| (TenantId(id), false))
            .ok_or(TenantError::SlugTaken);
    };
    sqlx::query!(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
        id,
        owner.0,
    )
    .execute(&mut *tx)
    .await
    .context("granting the owner role")?;
    tx.commit().await.context("committing the tenant")?;
    Ok((TenantId(id), true))
}

/// A tenant new from the web (`tenants.self_signup`): `owner` (a verified
/// account, the use case checks) becomes its owner. A taken slug is
/// refused, never joined.
pub async fn create_with_owner(
    pool: &PgPool,
    slug: &TenantSlug,
    name: &TenantName,
    owner: AccountId,
) -> Result<TenantId, TenantError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let id = sqlx::query_scalar!(
        "INSERT INTO tenants (id, slug, name) VALUES ($1, $2, $3)
         ON CONFLICT (slug) DO NOTHING RETURNING id",
        Uuid::now_v7(),
        slug.as_str(),
        name.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("inserting a tenant")?
    .ok_or(TenantError::SlugTaken)?;
    sqlx::query!(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
        id,
        owner.0,
    )
    .execute(&mut *tx)
    .await
    .context("granting the owner role")?;
    audit::admin_action(
        &mut tx,
        TenantId(id),
        owner,
        "tenant.created",
        ("tenant", id),
        serde_json::json!({ "slug": slug.as_str(), "name": name.as_str() }),
    )
    .await?;
    tx.commit().await.context("committing the tenant")?;
    Ok(TenantId(id))
}

/// A tenant as the console lists it, with the caller's role in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantSummary {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
    /// How many members its team has.
    pub members: i64,
    /// The role of the account that asked.
    pub role: Role,
}

/// The tenants `account` is a member of, by name.
pub async fn memberships_of(
    pool: &PgPool,
    account: AccountId,
) -> anyhow::Result<Vec<TenantSummary>> {
    let rows = sqlx::query!(
        r#"SELECT t.id, t.slug, t.name, m.role AS "role: Role",
                  (SELECT count(*) FROM tenant_members a WHERE a.tenant_id = t.id) AS "members!"
           FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id
           WHERE m.account_id = $1
           ORDER BY t.name, t.id"#,
        account.0,
    )
    .fetch_all(pool)
    .await
    .context("listing an account's tenants")?;
    Ok(rows
        .into_iter()
        .map(|r| TenantSummary {
            id: TenantId(r.id),
            slug: r.slug,
            name: r.name,
            members: r.members,
            role: r.role,
        })
        .collect())
}

/// One tenant's summary, as `account` (a member) sees it.
pub async fn summary(
    pool: &PgPool,
    tenant: TenantId,
    account: AccountId,
) -> anyhow::Result<Option<TenantSummary>> {
    let row = sqlx::query!(
        r#"SELECT t.id, t.slug, t.name, m.role AS "role: Role",
                  (SELECT count(*) FROM tenant_members a WHERE a.tenant_id = t.id) AS "members!"
           FROM tenants t JOIN tenant_members m ON m.tenant_id = t.id AND m.account_id = $2
           WHERE t.id = $1"#,
        tenant.0,
        account.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a tenant")?;
    Ok(row.map(|r| TenantSummary {
        id: TenantId(r.id),
        slug: r.slug,
        name: r.name,
        members: r.members,
        role: r.role,
    }))
}

/// The tenant with this slug, if any.
pub async fn find_by_slug(pool: &PgPool, slug: &TenantSlug) -> anyhow::Result<Option<TenantId>> {
    let id = sqlx::query_scalar!("SELECT id FROM tenants WHERE slug = $1", slug.as_str())
        .fetch_optional(pool)
        .await
        .context("finding a tenant by slug")?;
    Ok(id.map(TenantId))
}

/// The tenants `account` is a member of (any role).
pub async fn tenant_ids_of(pool: &PgPool, account: AccountId) -> anyhow::Result<Vec<TenantId>> {
    let ids = sqlx::query_scalar!(
        "SELECT tenant_id FROM tenant_members WHERE account_id = $1",
        account.0,
    )
    .fetch_all(pool)
    .await
    .context("listing an account's tenants")?;
    Ok(ids.into_iter().map(TenantId).collect())
}

/// `account`'s role in `tenant`, if it is a member.
pub async fn role_of(
    pool: &PgPool,
    tenant: TenantId,
    account: AccountId,
) -> anyhow::Result<Option<Role>> {
    sqlx::query_scalar!(
        r#"SELECT role AS "role: Role" FROM tenant_members WHERE tenant_id = $1 AND account_id = $2"#,
        tenant.0,
        account.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a member's role")
}

/// What a tenant decides for itself.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// A code binds only to an account whose address is verified.
    pub require_verified_email: bool,
    /// Where its console's times are read and typed.
    pub time_zone: Zone,
}

/// A zone name as stored: one that no longer parses (a tz database that
/// dropped it) reads as UTC rather than failing every page.
fn stored_zone(name: &str) -> Zone {
    Zone::parse(name).unwrap_or_else(|_| {
        tracing::warn!(
            zone = name,
            "a tenant's stored time zone is unknown; using UTC"
        );
        Zone::utc()
    })
}

/// A tenant's settings.
pub async fn settings(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Option<TenantSettings>> {
    let row = sqlx::query!(
        "SELECT require_verified_email, time_zone FROM tenants WHERE id = $1",
        tenant.0
    )
    .fetch_optional(pool)
    .await
    .context("reading a tenant's settings")?;
    Ok(row.map(|r| TenantSettings {
        require_verified_email: r.require_verified_email,
        time_zone: stored_zone(&r.time_zone),
    }))
}

/// A tenant's time zone (UTC for a tenant that does not exist).
pub async fn zone(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Zone> {
    let name = sqlx::query_scalar!("SELECT time_zone FROM tenants WHERE id = $1", tenant.0)
        .fetch_optional(pool)
        .await
        .context("reading a tenant's time zone")?;
    Ok(name.as_deref().map_or_else(Zone::utc, stored_zone))
}

/// Changes a tenant's settings (audited with what changed). The zone must
/// be known to PostgreSQL too, which counts the chart's days in it.
pub async fn update_settings(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    new: TenantSettings,
) -> Result<(), TenantError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let known = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = $1) AS "known!""#,
        new.time_zone.name(),
    )
    .fetch_one(&mut *tx)
    .await
    .context("looking a time zone up")?;
    if !known {
        return Err(crate::zone::UnknownZone.into());
    }
    // NO KEY UPDATE: rows that reference the tenant (a binding's receipt)
    // may still be written meanwhile.
    let before = sqlx::query!(
        "SELECT require_verified_email, time_zone FROM tenants WHERE id = $1 FOR NO KEY UPDATE",
        tenant.0
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading a tenant's settings")?;
    if before.require_verified_email != new.require_verified_email
        || before.time_zone != new.time_zone.name()
    {
        sqlx::query!(
            "UPDATE tenants SET require_verified_email = $2, time_zone = $3 WHERE id = $1",
            tenant.0,
            new.require_verified_email,
            new.time_zone.name(),
        )
        .execute(&mut *tx)
        .await
        .context("storing a tenant's settings")?;
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            "tenant.settings_changed",
            ("tenant", tenant.0),
            serde_json::json!({
                "require_verified_email": new.require_verified_email,
                "time_zone": new.time_zone.name(),
            }),
        )
        .await?;
    }
    tx.commit()
        .await
        .context("committing a tenant's settings")?;
    Ok(())
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
        for hidden in ["Acme\u{202E}ypp", "Ac\u{200B}me", "\u{FEFF}Acme", "A\u{0}B"] {
            assert!(TenantName::parse(hidden).is_err(), "{hidden:?}");
        }
    }
}
