//! Joining a tenant's team from the browser: an invitation's page (who
//! invites, to what, as which role) and its acceptance, and creating a
//! tenant of one's own where the server allows it (`tenants.self_signup`).
//! Thin adapters over `service::team`, under `/api/team/`.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use model::Role;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::{auth::guard, state::services};

/// What an invitation link shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum InvitationView {
    Open {
        tenant_name: String,
        email: String,
        role: Role,
        invited_by: String,
        /// Who is signed in (`None`: nobody).
        signed_in_as: Option<String>,
    },
    /// Used, revoked, expired or unknown.
    Invalid,
}

/// The invitation behind a link.
#[server(prefix = "/api/team", endpoint = "invitation", input = server_fn::codec::GetUrl)]
pub async fn invitation(token: String) -> Result<InvitationView, AppError> {
    let state = services()?;
    let Some(token) = engine::accounts::links::LinkToken::parse(&token) else {
        return Ok(InvitationView::Invalid);
    };
    let preview = engine::team::preview(&state.pool, &token)
        .await
        .map_err(|e| AppError::internal(&e))?;
    let me = guard::current_principal().await?;
    Ok(match preview {
        Some(p) => InvitationView::Open {
            tenant_name: p.tenant_name,
            email: p.email,
            role: p.role,
            invited_by: p.invited_by,
            signed_in_as: me.map(|m| m.email),
        },
        None => InvitationView::Invalid,
    })
}

/// Accepts an invitation as the signed-in account; on to the tenant's
/// console.
#[server(prefix = "/api/team", endpoint = "accept")]
pub async fn accept_invitation(token: String) -> Result<(), AppError> {
    let state = services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    let (tenant, _) = service::team::accept(&state, &principal, ip, &token).await?;
    guard::set_flash(&crate::auth::Flash {
        kind: crate::auth::FlashKind::Success,
        message: crate::i18n::t(Msg::WelcomeToTheTeam).into(),
    })
    .await?;
    leptos_axum::redirect(&format!("/admin/t/{}", tenant.0));
    Ok(())
}

/// Whether this server lets a verified account create a tenant.
#[server(prefix = "/api/team", endpoint = "signup-open", input = server_fn::codec::GetUrl)]
pub async fn tenant_signup_open() -> Result<bool, AppError> {
    let state = services()?;
    Ok(state.auth.tenant_self_signup)
}

/// Creates a tenant owned by the signed-in (verified) account; on to its
/// console.
#[server(prefix = "/api/team", endpoint = "create-tenant")]
pub async fn create_tenant(name: String, slug: String) -> Result<Uuid, AppError> {
    let state = services()?;
    let principal = guard::require_learner().await?;
    let ip = guard::client_ip().await?;
    let tenant = service::team::create_tenant(
        &state,
        &principal,
        ip,
        service::team::NewTenantForm { name, slug },
    )
    .await?;
    leptos_axum::redirect(&format!("/admin/t/{}", tenant.0));
    Ok(tenant.0)
}
