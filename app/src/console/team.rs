//! A tenant's team (`/admin/t/{tenant}/team`, the page in
//! `pages/console/team.rs`): who is on it with which role, the open
//! invitations, and the tenant's settings. Every member sees the team and
//! may leave it; owners invite, change roles, remove members, withdraw
//! invitations and change the settings. The use cases are
//! `service::team`'s; the last-owner rule is the database's.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use model::Role;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// The team page's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamView {
    pub tenant_name: String,
    /// The signed-in member.
    pub me: Uuid,
    pub my_role: Role,
    pub members: Vec<MemberRow>,
    /// Open invitations (owners only; empty for the others).
    pub invitations: Vec<InvitationRow>,
    /// A code binds only to verified addresses.
    pub require_verified_email: bool,
    /// The console's times are in this zone (`Asia/Shanghai`).
    pub time_zone: String,
    /// What learners see of the tenant (`engine::branding`).
    pub brand: crate::learner::Brand,
}

/// A member as the team page lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRow {
    pub account: Uuid,
    pub email: String,
    pub name: String,
    pub role: Role,
    pub since: String,
}

/// An open invitation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvitationRow {
    pub id: Uuid,
    pub email: String,
    pub role: Role,
    pub invited_by: String,
    pub expires: String,
    pub expired: bool,
}

#[cfg(feature = "ssr")]
fn team_error(error: service::ServiceError) -> AppError {
    error.into()
}

/// The team, as the signed-in member may see it.
#[server(prefix = "/api/admin", endpoint = "team", input = server_fn::codec::GetUrl)]
pub async fn team(tenant_id: Uuid) -> Result<TeamView, AppError> {
    use engine::tenants::Permission;
    use support::internal;
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    let tenant = engine::tenants::TenantId(tenant_id);
    let (me, my_role) =
        service::session::membership(&state, &session, tenant, Permission::ViewConsole).await?;
    let zone = support::zone(&state, tenant).await?;
    let summary = engine::tenants::summary(&state.pool, tenant, me.id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let members = engine::team::members(&state.pool, tenant)
        .await
        .map_err(internal)?;
    let invitations = if my_role.allows(Permission::ManageTeam) {
        engine::team::invitations(&state.pool, tenant)
            .await
            .map_err(internal)?
    } else {
        Vec::new()
    };
    let settings = engine::tenants::settings(&state.pool, tenant)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let brand = engine::branding::of(&state.pool, tenant)
        .await
        .map_err(internal)?
        .into();
    Ok(TeamView {
        brand,
        tenant_name: summary.name,
        me: me.id.0,
        my_role,
        members: members
            .into_iter()
            .map(|m| MemberRow {
                account: m.account.0,
                email: m.email,
                name: m.display_name,
                role: m.role,
                since: zone.when(m.since),
            })
            .collect(),
        invitations: invitations
            .into_iter()
            .map(|i| InvitationRow {
                // Before the fields it reads are moved.
                expired: i.expired(),
                id: i.id,
                email: i.email,
                role: i.role,
                invited_by: i.invited_by,
                expires: zone.when(i.expires_at),
            })
            .collect(),
        require_verified_email: settings.require_verified_email,
        time_zone: settings.time_zone.name().to_owned(),
    })
}

/// Invites an address to the team with a role (owners).
#[server(prefix = "/api/admin", endpoint = "team/invite")]
pub async fn invite_member(tenant_id: Uuid, email: String, role: String) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    let ip = crate::auth::guard::client_ip().await?;
    let form = service::team::InvitationForm {
        email: email.clone(),
        role,
    };
    service::team::invite(
        &state,
        &session,
        ip,
        engine::tenants::TenantId(tenant_id),
        form,
        crate::i18n::lang(),
    )
    .await
    .map_err(team_error)?;
    if crate::auth::guard::from_plain_form() {
        crate::auth::guard::set_flash(&crate::auth::Flash {
            kind: crate::auth::FlashKind::Success,
            message: crate::i18n::lang().format(Msg::InvitationSentTo, &[("email", &email.trim())]),
        })
        .await?;
    }
    Ok(())
}

/// Gives a member another role (owners; never the last owner away).
#[server(prefix = "/api/admin", endpoint = "team/role")]
pub async fn change_member_role(
    tenant_id: Uuid,
    account_id: Uuid,
    role: String,
) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    service::team::change_role(
        &state,
        &session,
        engine::tenants::TenantId(tenant_id),
        engine::accounts::AccountId(account_id),
        &role,
    )
    .await
    .map_err(team_error)
}

/// Takes a member off the team (owners; never the last owner).
#[server(prefix = "/api/admin", endpoint = "team/remove")]
pub async fn remove_member(tenant_id: Uuid, account_id: Uuid) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    service::team::remove(
        &state,
        &session,
        engine::tenants::TenantId(tenant_id),
        engine::accounts::AccountId(account_id),
    )
    .await
    .map_err(team_error)
}

/// Withdraws an open invitation (owners).
#[server(prefix = "/api/admin", endpoint = "team/invitations/revoke")]
pub async fn revoke_invitation(tenant_id: Uuid, invitation_id: Uuid) -> Result<(), AppError> {
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    service::team::revoke_invitation(
        &state,
        &session,
        engine::tenants::TenantId(tenant_id),
        invitation_id,
    )
    .await
    .map_err(team_error)
}

/// Leaves the team (any member but the last owner); back to the console.
#[server(prefix = "/api/admin", endpoint = "team/leave")]
pub async fn leave_team(tenant_id: Uuid, confirm: Option<String>) -> Result<(), AppError> {
    // A member, before anything about the request: an outsider learns
    // nothing from an unconfirmed call either.
    crate::auth::guard::require_member(
        engine::tenants::TenantId(tenant_id),
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    support::confirmed(confirm.as_deref(), crate::i18n::Msg::ConfirmYouLeaveTheTeam)?;
    let state = crate::state::services()?;
    let session = crate::auth::guard::session().await?;
    service::team::leave(&state, &session, engine::tenants::TenantId(tenant_id))
        .await
        .map_err(team_error)?;
    leptos_axum::redirect("/admin");
    Ok(())
}

/// Changes the tenant's settings (owners). A checkbox: present is on. The
/// time zone is an IANA name (`Asia/Shanghai`); absent keeps the current.
#[server(prefix = "/api/admin", endpoint = "tenant/settings")]
pub async fn update_tenant_settings(
    tenant_id: Uuid,
    require_verified_email: Option<String>,
    time_zone: Option<String>,
) -> Result<(), AppError> {
    let (state, tenant, owner) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageTeam).await?;
    let time_zone = match time_zone {
        Some(name) => engine::zone::Zone::parse(&name)
            .map_err(|e| AppError::outcome(engine::tenants::TenantError::from(e)))?,
        None => support::zone(&state, tenant).await?,
    };
    engine::tenants::update_settings(
        &state.pool,
        tenant,
        owner.id,
        engine::tenants::TenantSettings {
            require_verified_email: require_verified_email.is_some(),
            time_zone,
        },
    )
    .await
    .map_err(AppError::outcome)
}

/// Changes what learners see of the tenant (owners): its name, accent
/// colour (`#rrggbb`, empty for the default) and support address (empty
/// for none). Every field is checked before anything is written.
#[server(prefix = "/api/admin", endpoint = "tenant/branding")]
pub async fn update_branding(
    tenant_id: Uuid,
    name: String,
    accent: Option<String>,
    support_email: Option<String>,
) -> Result<(), AppError> {
    let (state, tenant, owner) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageTeam).await?;
    let change = engine::branding::BrandingChange::parse(
        &name,
        accent.as_deref().unwrap_or_default(),
        support_email.as_deref().unwrap_or_default(),
    )
    .map_err(AppError::outcome)?;
    engine::branding::update(&state.pool, tenant, owner.id, &change)
        .await
        .map_err(AppError::outcome)
}

/// Removes the tenant's logo (owners); uploading one is the team page's
/// multipart form (`POST /admin/t/{tenant}/logo`).
#[server(prefix = "/api/admin", endpoint = "tenant/logo/remove")]
pub async fn remove_logo(tenant_id: Uuid) -> Result<(), AppError> {
    let (state, tenant, owner) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageTeam).await?;
    engine::branding::remove_logo(&state.pool, tenant, owner.id)
        .await
        .map(|_| ())
        .map_err(AppError::outcome)
}
