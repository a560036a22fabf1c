//! The tenant's API tokens (`/admin/t/{tenant}/tokens`, the page in
//! `pages/console/tokens.rs`): list, create (shown once), revoke.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// An API token as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    pub id: Uuid,
    pub name: String,
    pub scopes: String,
    pub created_by: String,
    pub created: String,
    pub last_used: Option<String>,
    pub revoked: Option<String>,
    /// When it stops working, if it has an expiry.
    pub expires: Option<String>,
    /// It expired: refused like a revoked one.
    pub expired: bool,
}

#[cfg(feature = "ssr")]
fn token_error(error: engine::tokens::TokenError) -> AppError {
    AppError::outcome(error)
}

/// The tenant's API tokens.
#[server(prefix = "/api/admin", endpoint = "tokens", input = server_fn::codec::GetUrl)]
pub async fn api_tokens(tenant_id: Uuid) -> Result<Vec<TokenRow>, AppError> {
    let (state, tenant, _) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let zone = support::zone(&state, tenant).await?;
    let tokens = engine::tokens::list(&state.pool, tenant)
        .await
        .map_err(support::internal)?;
    Ok(tokens
        .into_iter()
        .map(|t| TokenRow {
            // Before the fields it reads are moved.
            expired: t.expired(),
            id: t.id,
            name: t.name,
            scopes: t
                .scopes
                .iter()
                .map(|s| crate::i18n::scope(s))
                .collect::<Vec<_>>()
                .join(", "),
            created_by: t.created_by,
            created: zone.when(t.created_at),
            last_used: t.last_used_at.map(|at| zone.when(at)),
            revoked: t.revoked_at.map(|at| zone.when(at)),
            expires: t.expires_at.map(|at| zone.when(at)),
        })
        .collect())
}

/// Creates an API token; the answer is the token, shown this once.
#[server(prefix = "/api/admin", endpoint = "tokens/create")]
pub async fn create_token(
    tenant_id: Uuid,
    name: String,
    read: Option<String>,
    write: Option<String>,
    integrations: Option<String>,
    expires_in_days: Option<String>,
) -> Result<String, AppError> {
    use engine::tokens::Scope;
    use secrecy::ExposeSecret as _;
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let mut scopes = Vec::new();
    if read.is_some() {
        scopes.push(Scope::Read);
    }
    if write.is_some() {
        scopes.push(Scope::Write);
    }
    if integrations.is_some() {
        scopes.push(Scope::Integrations);
    }
    let expires_at = match expires_in_days.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(days) => {
            // Checked here too: a huge number must not overflow the date.
            let days: i64 = days
                .parse()
                .ok()
                .filter(|d| (1..=3_653).contains(d))
                .ok_or_else(|| token_error(engine::tokens::TokenError::InvalidExpiry))?;
            Some(time::OffsetDateTime::now_utc() + time::Duration::days(days))
        }
    };
    let (_, token) = engine::tokens::create(
        &state.pool,
        tenant,
        admin.id,
        &name,
        &scopes,
        expires_at,
        None,
    )
    .await
    .map_err(token_error)?;
    let token = token.expose_secret().to_owned();
    // Without JavaScript the token travels to the next page.
    support::say_on_next_page(
        crate::i18n::lang().format(Msg::NewTokenShownOnceCopyIt, &[("token", &token)]),
    )
    .await?;
    Ok(token)
}

/// Revokes an API token at once (`confirm` = `yes`: whatever uses it stops).
#[server(prefix = "/api/admin", endpoint = "tokens/revoke")]
pub async fn revoke_token(
    tenant_id: Uuid,
    token_id: Uuid,
    confirm: Option<String>,
) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    support::confirmed(
        confirm.as_deref(),
        crate::i18n::Msg::ConfirmTokenStopsWorking,
    )?;
    engine::tokens::revoke(&state.pool, tenant, admin.id, token_id)
        .await
        .map_err(token_error)
}
