//! A tenant's team and the tenant's say over its learners: invitations
//! (sent by owners, accepted by the invited address only), role changes,
//! removals and leaving (a tenant always keeps an owner: the engine's
//! trigger), tenant signup from the web (a setting, for verified accounts
//! only), and suspending a learner. Reads for the console (the member
//! list) are single engine calls the adapters make after [`member_of`].
//!
//! [`member_of`]: crate::session::member_of

use std::net::IpAddr;

use engine::{
    accounts::{AccountId, Email, Principal, links::LinkToken},
    coordination::ThrottleScope,
    suspension,
    team::{self, TeamError},
    tenants::{self, Permission, Role, TenantId, TenantName, TenantSlug},
};
use model::Lang;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{ServiceError, Services, session, throttle};

/// Counts one mail-sending action of `account` and of `ip`.
pub(crate) async fn count_mail(
    services: &Services,
    account: AccountId,
    ip: IpAddr,
) -> Result<(), ServiceError> {
    throttle::hit(
        services,
        ThrottleScope::MailAccount,
        &account.0.to_string(),
        services.auth.mail_per_account,
    )
    .await?;
    throttle::hit_ip(
        services,
        ThrottleScope::MailIp,
        ip,
        services.auth.mail_per_ip,
    )
    .await
}

/// What the invitation form carries.
#[derive(Debug)]
pub struct InvitationForm {
    pub email: String,
    pub role: String,
}

/// An owner invites an address to the team (throttled per owner and IP).
#[tracing::instrument(name = "invite", skip_all, fields(tenant = %tenant.0))]
pub async fn invite(
    services: &Services,
    session: &Session,
    ip: IpAddr,
    tenant: TenantId,
    form: InvitationForm,
    lang: Lang,
) -> Result<Uuid, ServiceError> {
    let owner = session::member_of(services, session, tenant, Permission::ManageTeam).await?;
    let email = Email::parse(&form.email)?;
    let role = Role::parse(&form.role).map_err(|_| ServiceError::InvalidRole)?;
    count_mail(services, owner.id, ip).await?;
    Ok(team::invite(
        &services.pool,
        &services.links,
        tenant,
        owner.id,
        &email,
        role,
        lang,
    )
    .await?)
}

/// Accepts an invitation as the signed-in account (its address must be
/// the invited one). Throttled per IP: the link is the secret.
#[tracing::instrument(name = "accept_invitation", skip_all)]
pub async fn accept(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    token: &str,
) -> Result<(TenantId, Role), ServiceError> {
    let token = LinkToken::parse(token).ok_or(TeamError::InvitationInvalid)?;
    throttle::hit_ip(
        services,
        ThrottleScope::MailIp,
        ip,
        services.auth.mail_per_ip,
    )
    .await?;
    Ok(team::accept(&services.pool, &token, principal.id).await?)
}

/// An owner gives a member another role.
pub async fn change_role(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    member: AccountId,
    role: &str,
) -> Result<(), ServiceError> {
    let owner = session::member_of(services, session, tenant, Permission::ManageTeam).await?;
    let role = Role::parse(role).map_err(|_| ServiceError::InvalidRole)?;
    Ok(team::change_role(&services.pool, tenant, owner.id, member, role).await?)
}

/// An owner takes a member off the team.
pub async fn remove(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    member: AccountId,
) -> Result<(), ServiceError> {
    let owner = session::member_of(services, session, tenant, Permission::ManageTeam).await?;
    Ok(team::remove(&services.pool, tenant, owner.id, member).await?)
}

/// Any member leaves the team (the last owner cannot).
pub async fn leave(
    services: &Services,
    session: &Session,
    tenant: TenantId,
) -> Result<(), ServiceError> {
    let me = session::member_of(services, session, tenant, Permission::ViewConsole).await?;
    Ok(team::remove(&services.pool, tenant, me.id, me.id).await?)
}

/// An owner withdraws an open invitation.
pub async fn revoke_invitation(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    invitation: Uuid,
) -> Result<(), ServiceError> {
    let owner = session::member_of(services, session, tenant, Permission::ManageTeam).await?;
    Ok(team::revoke_invitation(&services.pool, tenant, owner.id, invitation).await?)
}

/// What the tenant signup form carries.
#[derive(Debug)]
pub struct NewTenantForm {
    pub name: String,
    pub slug: String,
}

/// A verified account creates a tenant and becomes its owner, where the
/// server allows it (`tenants.self_signup`). Throttled per account.
#[tracing::instrument(name = "create_tenant", skip_all)]
pub async fn create_tenant(
    services: &Services,
    principal: &Principal,
    ip: IpAddr,
    form: NewTenantForm,
) -> Result<TenantId, ServiceError> {
    if !services.auth.tenant_self_signup {
        return Err(ServiceError::SignupClosed);
    }
    if !principal.email_verified {
        return Err(ServiceError::VerifyEmailFirst);
    }
    let name = TenantName::parse(&form.name)?;
    let slug = TenantSlug::parse(&form.slug)?;
    count_mail(services, principal.id, ip).await?;
    Ok(tenants::create_with_owner(&services.pool, &slug, &name, principal.id).await?)
}

/// An admin suspends (or re-enables) one of the tenant's learners.
pub async fn set_learner_suspended(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    learner: AccountId,
    suspended: bool,
) -> Result<(), ServiceError> {
    let admin = session::member_of(services, session, tenant, Permission::ManageCourses).await?;
    Ok(suspension::set_suspended(&services.pool, tenant, admin.id, learner, suspended).await?)
}
