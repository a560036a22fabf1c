//! Tenant API tokens: how scripts and shop integrations call the JSON API
//! as an admin of one tenant, without a browser session.
//!
//! A token is `a1t_` + 256 random bits (base64url), shown once. Only its
//! SHA-256 digest is stored: the token has full entropy, so a slow password
//! hash would add nothing but latency on every call. A token acts as the
//! member who created it (an owner), within its scopes and that member's
//! current role, and stops working when it is revoked, when it expires,
//! when that member leaves the team, or when the account is disabled.
//!
//! A token with the `integrations` scope may make tokens too, but never one
//! that does more than itself or outlives it ([`TokenCaller::may_mint`]).

use anyhow::Context as _;
use base64::Engine as _;
use rand::RngCore as _;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;
use sha2::{Digest as _, Sha256};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::{AccountId, Principal},
    audit,
    tenants::{Permission, Role, TenantId},
};

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Read shares and codes.
    Read,
    /// Create and change shares, resources and codes.
    Write,
    /// Manage webhooks and API tokens (what a shop's setup script does).
    Integrations,
}

impl Scope {
    pub fn parse(raw: &str) -> Result<Self, TokenError> {
        match raw {
            "read" => Ok(Self::Read),
            "write" => Ok(Self::Write),
            "integrations" => Ok(Self::Integrations),
            _ => Err(TokenError::InvalidScope),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Integrations => "integrations",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("a token name is 1 to 80 characters")]
    InvalidName,
    #[error("choose at least one scope: read, write, integrations")]
    InvalidScope,
    #[error("a token expires in the future, within 10 years")]
    InvalidExpiry,
    #[error(
        "a token cannot make a token with more scopes than its own, or one that outlives it, and revokes only itself and the tokens it made"
    )]
    BeyondCaller,
    #[error("this tenant has {MAX_LIVE} live tokens: revoke one first")]
    TooMany,
    #[error("no such token")]
    NotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// A token as the console lists it (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenView {
    pub id: Uuid,
    pub name: String,
    pub scopes: Vec<String>,
    pub created_by: String,
    pub created_at: OffsetDateTime,
    pub last_used_at: Option<OffsetDateTime>,
    pub revoked_at: Option<OffsetDateTime>,
    pub expires_at: Option<OffsetDateTime>,
}

impl TokenView {
    /// Whether its date has passed (it no longer works).
    pub fn expired(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at <= OffsetDateTime::now_utc())
    }
}

/// A verified token: the member it acts as, where, and what it may do.
#[derive(Debug, Clone)]
pub struct TokenCaller {
    pub token: Uuid,
    pub tenant: TenantId,
    pub principal: Principal,
    /// The creator's role now: a token never does more than its creator
    /// may (a demoted owner's write token writes no more).
    pub role: Role,
    pub scopes: Vec<Scope>,
    pub expires_at: Option<OffsetDateTime>,
}

impl TokenCaller {
    /// Whether the token may do what `permission` covers: its scope
    /// (`read` views, `write` manages courses; neither reaches the team or
    /// the integrations) and its creator's current role both allow it.
    pub fn allows(&self, permission: Permission) -> bool {
        let scope = match permission {
            Permission::ViewConsole => Scope::Read,
            Permission::ManageCourses => Scope::Write,
            Permission::ManageIntegrations => Scope::Integrations,
            Permission::ManageTeam => return false,
        };
        self.scopes.contains(&scope) && self.role.allows(permission)
    }

    /// Whether this token may make a token with `scopes` expiring at
    /// `expires_at`: none it lacks itself, and not living longer.
    pub fn may_mint(&self, scopes: &[Scope], expires_at: Option<OffsetDateTime>) -> bool {
        let within_scopes = scopes.iter().all(|s| self.scopes.contains(s));
        let within_life = match (self.expires_at, expires_at) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(mine), Some(theirs)) => theirs <= mine,
        };
        within_scopes && within_life
    }
}

/// Live (not revoked, not expired) tokens a tenant may have at once.
pub const MAX_LIVE: i64 = 100;

fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Creates a token; returns its id and the token, which exists only here.
/// `parent` is the token that asked (through the API): revoking it revokes
/// this one too.
pub async fn create(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    name: &str,
    scopes: &[Scope],
    expires_at: Option<OffsetDateTime>,
    parent: Option<Uuid>,
) -> Result<(Uuid, SecretString), TokenError> {
    let name = name.trim();
    if !(1..=80).contains(&name.chars().count()) || name.chars().any(char::is_control) {
        return Err(TokenError::InvalidName);
    }
    if scopes.is_empty() {
        return Err(TokenError::InvalidScope);
    }
    if let Some(at) = expires_at {
        let now = OffsetDateTime::now_utc();
        if at <= now || at > now + time::Duration::days(3_653) {
            return Err(TokenError::InvalidExpiry);
        }
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let token = format!(
        "a1t_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let mut scope_names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    scope_names.sort_unstable();
    scope_names.dedup();
    let id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // One creation per tenant at a time, so the count below holds.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('api_tokens:' || $1::uuid::text, 0))",
        tenant.0,
    )
    .execute(&mut *tx)
    .await
    .context("locking the tenant's tokens")?;
    let live = sqlx::query_scalar!(
        r#"SELECT count(*) AS "live!" FROM api_tokens
           WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())"#,
        tenant.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("counting live tokens")?;
    if live >= MAX_LIVE {
        return Err(TokenError::TooMany);
    }
    sqlx::query!(
        "INSERT INTO api_tokens (tenant_id, id, name, scopes, digest, created_by, expires_at, parent_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        tenant.0,
        id,
        name,
        &scope_names as &[&str],
        digest(&token),
        actor.0,
        expires_at,
        parent,
    )
    .execute(&mut *tx)
    .await
    .context("storing a token")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "token.created",
        ("api_token", id),
        json!({
            "name": name,
            "scopes": scope_names,
            "expires_at": expires_at.map(|at| at.unix_timestamp()),
            "via_token": parent,
        }),
    )
    .await?;
    tx.commit().await.context("committing the token")?;
    Ok((id, SecretString::from(token)))
}

/// A tenant's tokens: the live ones (at most [`MAX_LIVE`]) first, then the
/// most recent dead ones; newest first within each.
pub async fn list(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Vec<TokenView>> {
    sqlx::query_as!(
        TokenView,
        r#"SELECT t.id, t.name, t.scopes, a.email AS created_by, t.created_at, t.last_used_at, t.revoked_at,
                  t.expires_at
           FROM api_tokens t JOIN accounts a ON a.id = t.created_by
           WHERE t.tenant_id = $1
           ORDER BY (t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())) DESC,
                    t.created_at DESC
           LIMIT 300"#,
        tenant.0,
    )
    .fetch_all(pool)
    .await
    .context("listing tokens")
}

/// Whether `token` is `ancestor` or was made by it, directly or through
/// tokens it made.
pub async fn descends_from(
    pool: &PgPool,
    tenant: TenantId,
    token: Uuid,
    ancestor: Uuid,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"WITH RECURSIVE line AS (
               SELECT id, parent_id FROM api_tokens WHERE tenant_id = $1 AND id = $2
               UNION
               SELECT t.id, t.parent_id FROM api_tokens t JOIN line ON t.id = line.parent_id
               WHERE t.tenant_id = $1
           )
           SELECT EXISTS (SELECT 1 FROM line WHERE id = $3) AS "descends!""#,
        tenant.0,
        token,
        ancestor,
    )
    .fetch_one(pool)
    .await
    .context("tracing a token's line")
}

/// Revokes a token at once, and every token it made (audited). Revoking
/// twice changes nothing.
pub async fn revoke(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    token: Uuid,
) -> Result<(), TokenError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let name = sqlx::query_scalar!(
        "SELECT name FROM api_tokens WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        token,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding a token")?
    .ok_or(TokenError::NotFound)?;
    let revoked = sqlx::query!(
        r#"WITH RECURSIVE tree AS (
               SELECT id FROM api_tokens WHERE tenant_id = $1 AND id = $2
               UNION
               SELECT t.id FROM api_tokens t JOIN tree ON t.parent_id = tree.id
               WHERE t.tenant_id = $1
           )
           UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
           WHERE tenant_id = $1 AND id IN (SELECT id FROM tree)"#,
        tenant.0,
        token,
    )
    .execute(&mut *tx)
    .await
    .context("revoking a token and the tokens it made")?
    .rows_affected();
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "token.revoked",
        ("api_token", token),
        json!({ "name": name, "tokens_revoked": revoked }),
    )
    .await?;
    tx.commit().await.context("committing the revocation")?;
    Ok(())
}

/// The caller behind a presented token, if it is live: not revoked, its
/// creator still an admin of the tenant and not disabled. Marks it used
/// (at most once a minute, so busy integrations do not write every call).
pub async fn authenticate(
    pool: &PgPool,
    token: &SecretString,
) -> anyhow::Result<Option<TokenCaller>> {
    let token = token.expose_secret();
    if !token.starts_with("a1t_") || token.len() > 100 {
        return Ok(None);
    }
    let row = sqlx::query!(
        r#"SELECT t.tenant_id, t.id, t.scopes, t.last_used_at, t.expires_at, a.id AS account, a.email, a.display_name,
                  a.email_verified_at IS NOT NULL AS "verified!", m.role AS "role: Role"
           FROM directory.secrets d
           JOIN api_tokens t ON t.tenant_id = d.tenant_id AND t.digest = d.digest
           JOIN accounts a ON a.id = t.created_by AND a.disabled_at IS NULL
           JOIN tenant_members m ON m.tenant_id = t.tenant_id AND m.account_id = a.id
           WHERE d.digest = $1 AND d.kind = 'api_token' AND t.revoked_at IS NULL
             AND (t.expires_at IS NULL OR t.expires_at > now())"#,
        digest(token),
    )
    .fetch_optional(pool)
    .await
    .context("checking a token")?;
    let Some(row) = row else {
        return Ok(None);
    };
    if row
        .last_used_at
        .is_none_or(|at| OffsetDateTime::now_utc() - at > time::Duration::minutes(1))
    {
        sqlx::query!(
            "UPDATE api_tokens SET last_used_at = now() WHERE tenant_id = $1 AND id = $2",
            row.tenant_id,
            row.id,
        )
        .execute(pool)
        .await
        .context("marking a token used")?;
    }
    Ok(Some(TokenCaller {
        token: row.id,
        tenant: TenantId(row.tenant_id),
        principal: Principal {
            id: AccountId(row.account),
            email: row.email,
            display_name: row.display_name,
            email_verified: row.verified,
        },
        role: row.role,
        scopes: row
            .scopes
            .iter()
            .filter_map(|s| Scope::parse(s).ok())
            .collect(),
        expires_at: row.expires_at,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(scopes: &[Scope], expires_at: Option<OffsetDateTime>) -> TokenCaller {
        TokenCaller {
            token: Uuid::nil(),
            tenant: TenantId(Uuid::nil()),
            principal: Principal {
                id: AccountId(Uuid::nil()),
                email: "owner@example.com".into(),
                display_name: "Owner".into(),
                email_verified: true,
            },
            role: Role::Owner,
            scopes: scopes.to_vec(),
            expires_at,
        }
    }

    #[test]
    fn a_token_mints_only_what_it_has_and_never_outlives_itself() {
        let now = OffsetDateTime::now_utc();
        let (soon, later) = (now + time::Duration::days(1), now + time::Duration::days(2));
        let forever = caller(&[Scope::Read, Scope::Integrations], None);
        assert!(forever.may_mint(&[Scope::Read], None));
        assert!(forever.may_mint(&[Scope::Read, Scope::Integrations], Some(later)));
        assert!(!forever.may_mint(&[Scope::Write], None), "a scope it lacks");
        assert!(!forever.may_mint(&[Scope::Read, Scope::Write], Some(soon)));
        let mortal = caller(&[Scope::Read, Scope::Integrations], Some(later));
        assert!(mortal.may_mint(&[Scope::Read], Some(soon)));
        assert!(
            mortal.may_mint(&[Scope::Read], Some(later)),
            "as long as itself"
        );
        assert!(
            !mortal.may_mint(&[Scope::Read], None),
            "for ever outlives it"
        );
        assert!(
            !mortal.may_mint(&[Scope::Read], Some(later + time::Duration::seconds(1))),
            "a second longer outlives it"
        );
    }

    #[test]
    fn integrations_is_the_scope_of_integrations_and_no_token_reaches_the_team() {
        let all = caller(&[Scope::Read, Scope::Write, Scope::Integrations], None);
        for permission in [
            Permission::ViewConsole,
            Permission::ManageCourses,
            Permission::ManageIntegrations,
        ] {
            assert!(all.allows(permission), "{permission:?}");
        }
        assert!(!all.allows(Permission::ManageTeam));
        let courses = caller(&[Scope::Read, Scope::Write], None);
        assert!(!courses.allows(Permission::ManageIntegrations));
        let mut admin = caller(&[Scope::Integrations], None);
        admin.role = Role::Admin;
        assert!(
            !admin.allows(Permission::ManageIntegrations),
            "the creator's role still decides"
        );
    }
}
