//! Tenant API tokens: how scripts and shop integrations call the JSON API
//! as an admin of one tenant, without a browser session.
//!
//! A token is `a1t_` + 256 random bits (base64url), shown once. Only its
//! SHA-256 digest is stored: the token has full entropy, so a slow password
//! hash would add nothing but latency on every call. A token acts as the
//! member who created it (an owner), within its scopes and that member's
//! current role, and stops working when it is revoked, when that member
//! leaves the team, or when the account is disabled.

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
}

impl Scope {
    pub fn parse(raw: &str) -> Result<Self, TokenError> {
        match raw {
            "read" => Ok(Self::Read),
            "write" => Ok(Self::Write),
            _ => Err(TokenError::InvalidScope),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("a token name is 1 to 80 characters")]
    InvalidName,
    #[error("choose at least one scope: read, write")]
    InvalidScope,
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
}

impl TokenCaller {
    /// Whether the token may do what `permission` covers: its scope
    /// (`read` views, `write` manages courses; neither reaches the team or
    /// the integrations) and its creator's current role both allow it.
    pub fn allows(&self, permission: Permission) -> bool {
        let scope = match permission {
            Permission::ViewConsole => Scope::Read,
            Permission::ManageCourses => Scope::Write,
            Permission::ManageIntegrations | Permission::ManageTeam => return false,
        };
        self.scopes.contains(&scope) && self.role.allows(permission)
    }
}

fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Creates a token; returns its id and the token, which exists only here.
pub async fn create(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    name: &str,
    scopes: &[Scope],
) -> Result<(Uuid, SecretString), TokenError> {
    let name = name.trim();
    if !(1..=80).contains(&name.chars().count()) || name.chars().any(char::is_control) {
        return Err(TokenError::InvalidName);
    }
    if scopes.is_empty() {
        return Err(TokenError::InvalidScope);
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
    sqlx::query!(
        "INSERT INTO api_tokens (tenant_id, id, name, scopes, digest, created_by)
         VALUES ($1, $2, $3, $4, $5, $6)",
        tenant.0,
        id,
        name,
        &scope_names as &[&str],
        digest(&token),
        actor.0,
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
        json!({ "name": name, "scopes": scope_names }),
    )
    .await?;
    tx.commit().await.context("committing the token")?;
    Ok((id, SecretString::from(token)))
}

/// A tenant's tokens, newest first.
pub async fn list(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Vec<TokenView>> {
    sqlx::query_as!(
        TokenView,
        r#"SELECT t.id, t.name, t.scopes, a.email AS created_by, t.created_at, t.last_used_at, t.revoked_at
           FROM api_tokens t JOIN accounts a ON a.id = t.created_by
           WHERE t.tenant_id = $1 ORDER BY t.created_at DESC LIMIT 200"#,
        tenant.0,
    )
    .fetch_all(pool)
    .await
    .context("listing tokens")
}

/// Revokes a token at once (audited). Revoking twice changes nothing.
pub async fn revoke(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    token: Uuid,
) -> Result<(), TokenError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let found = sqlx::query!(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
         WHERE tenant_id = $1 AND id = $2 RETURNING name",
        tenant.0,
        token,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("revoking a token")?
    .ok_or(TokenError::NotFound)?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "token.revoked",
        ("api_token", token),
        json!({ "name": found.name }),
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
        r#"SELECT t.tenant_id, t.id, t.scopes, t.last_used_at, a.id AS account, a.email, a.display_name,
                  a.email_verified_at IS NOT NULL AS "verified!", m.role AS "role: Role"
           FROM api_tokens t
           JOIN accounts a ON a.id = t.created_by AND a.disabled_at IS NULL
           JOIN tenant_members m ON m.tenant_id = t.tenant_id AND m.account_id = a.id
           WHERE t.digest = $1 AND t.revoked_at IS NULL"#,
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
    }))
}
