//! A tenant's team: its members and their roles, invitations by email, and
//! the one rule a team cannot break: **a tenant always has an owner**.
//!
//! That rule lives in the database, in the trigger
//! `tenant_members_keep_an_owner` (migration `…_accounts_and_teams.sql`):
//! a change that would leave a tenant without an owner (a demotion, a
//! removal, an owner leaving) fails, however many run at once, because the
//! trigger locks the tenant's row before it counts. This module maps that
//! refusal to [`TeamError::LastOwner`].
//!
//! Nobody becomes a member without proving the address: an invitation is a
//! single-use link mailed to one address ([`crate::accounts::links`]); it is
//! accepted only by a signed-in account with that address, and accepting
//! verifies it. Every change is audited.

use anyhow::Context as _;
use model::{AccountId, Lang, Role, TenantId};
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::{
        Email,
        links::{LinkKey, LinkPurpose, LinkToken},
    },
    audit,
    mail::{self, NewMail, Template},
};

/// The trigger's constraint name (see the module doc).
const KEEP_AN_OWNER: &str = "tenant_keeps_an_owner";

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("a tenant needs at least one owner: make someone else owner first")]
    LastOwner,
    #[error("this person is already a member of the team")]
    AlreadyMember,
    #[error("no such member")]
    MemberNotFound,
    #[error("no such invitation")]
    InvitationNotFound,
    /// Unknown, used, revoked or expired: one answer for all.
    #[error("this invitation has expired, was revoked or was already used; ask for a new one")]
    InvitationInvalid,
    /// Signed in with another address than the one invited.
    #[error("this invitation is for {invited}; sign in with that address to accept it")]
    WrongAccount { invited: String },
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

fn keeps_an_owner(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.constraint())
        .is_some_and(|c| c == KEEP_AN_OWNER)
}

/// A member as the team page lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub account: AccountId,
    pub email: String,
    pub display_name: String,
    pub role: Role,
    pub since: OffsetDateTime,
}

/// A tenant's members, owners first.
pub async fn members(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Vec<Member>> {
    let rows = sqlx::query!(
        r#"SELECT a.id, a.email, a.display_name, m.role AS "role: Role", m.created_at
           FROM tenant_members m JOIN accounts a ON a.id = m.account_id
           WHERE m.tenant_id = $1
           ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, a.email
           LIMIT 500"#,
        tenant.0,
    )
    .fetch_all(pool)
    .await
    .context("listing a team")?;
    Ok(rows
        .into_iter()
        .map(|r| Member {
            account: AccountId(r.id),
            email: r.email,
            display_name: r.display_name,
            role: r.role,
            since: r.created_at,
        })
        .collect())
}

/// An open invitation, as the team page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    pub id: Uuid,
    pub email: String,
    pub role: Role,
    pub invited_by: String,
    pub expires_at: OffsetDateTime,
}

impl Invitation {
    /// Whether its link no longer works.
    pub fn expired(&self) -> bool {
        self.expires_at <= OffsetDateTime::now_utc()
    }
}

/// A tenant's invitations that are neither accepted nor revoked (expired
/// ones too, until replaced: the page says they expired).
pub async fn invitations(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Vec<Invitation>> {
    sqlx::query_as!(
        Invitation,
        r#"SELECT i.id, i.email, i.role AS "role: Role", a.email AS invited_by, i.expires_at
           FROM tenant_invitations i JOIN accounts a ON a.id = i.invited_by
           WHERE i.tenant_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL
           ORDER BY i.created_at DESC
           LIMIT 500"#,
        tenant.0,
    )
    .fetch_all(pool)
    .await
    .context("listing invitations")
}

/// Invites `email` to the team as `role`: a single-use link valid for 7
/// days, mailed in the invitee's language if they have an account, else
/// in `lang` (the inviter's). A newer invitation to the same address
/// replaces the open one. Returns the invitation's id.
pub async fn invite(
    pool: &PgPool,
    links: &LinkKey,
    tenant: TenantId,
    inviter: AccountId,
    email: &Email,
    role: Role,
    lang: Lang,
) -> Result<Uuid, TeamError> {
    let mut tx = pool.begin().await.context("starting an invitation")?;
    let context = sqlx::query!(
        r#"SELECT t.name AS tenant_name, i.display_name AS inviter_name,
                  (SELECT lang FROM accounts WHERE email = $3) AS invitee_lang,
                  EXISTS (SELECT 1 FROM tenant_members m JOIN accounts a ON a.id = m.account_id
                          WHERE m.tenant_id = t.id AND a.email = $3) AS "member!"
           FROM tenants t, accounts i
           WHERE t.id = $1 AND i.id = $2"#,
        tenant.0,
        inviter.0,
        email.as_str(),
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading the invitation's context")?;
    if context.member {
        return Err(TeamError::AlreadyMember);
    }
    sqlx::query!(
        "UPDATE tenant_invitations SET revoked_at = now()
         WHERE tenant_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL",
        tenant.0,
        email.as_str(),
    )
    .execute(&mut *tx)
    .await
    .context("replacing an open invitation")?;
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO tenant_invitations (tenant_id, id, email, role, digest, invited_by, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
        tenant.0,
        id,
        email.as_str(),
        role.as_str(),
        links.digest_of(LinkPurpose::Invitation, id),
        inviter.0,
        LinkPurpose::Invitation.lifetime().as_seconds_f64(),
    )
    .execute(&mut *tx)
    .await
    .context("storing an invitation")?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: Some(tenant),
            account: None,
            template: Template::Invitation,
            to: email.as_str(),
            lang: context
                .invitee_lang
                .as_deref()
                .and_then(Lang::parse)
                .unwrap_or(lang),
            params: json!({
                "tenant": context.tenant_name,
                "inviter": context.inviter_name,
                "role": role.as_str(),
            }),
            link: Some(id),
        },
    )
    .await?;
    audit::admin_action(
        &mut tx,
        tenant,
        inviter,
        "member.invited",
        ("invitation", id),
        json!({ "email": email.as_str(), "role": role.as_str() }),
    )
    .await?;
    tx.commit().await.context("committing an invitation")?;
    Ok(id)
}

/// What an invitation link shows before it is accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvitationPreview {
    pub tenant: TenantId,
    pub tenant_name: String,
    pub email: String,
    pub role: Role,
    pub invited_by: String,
}

/// The open invitation behind a link, if it is one.
pub async fn preview(
    pool: &PgPool,
    token: &LinkToken,
) -> anyhow::Result<Option<InvitationPreview>> {
    let row = sqlx::query!(
        r#"SELECT i.tenant_id, t.name AS tenant_name, i.email, i.role AS "role: Role",
                  a.display_name AS invited_by
           FROM directory.secrets d
           JOIN tenant_invitations i ON i.tenant_id = d.tenant_id AND i.digest = d.digest
           JOIN tenants t ON t.id = i.tenant_id
           JOIN accounts a ON a.id = i.invited_by
           WHERE d.digest = $1 AND d.kind = 'invitation' AND i.accepted_at IS NULL AND i.revoked_at IS NULL
             AND i.expires_at > now()"#,
        token.digest(),
    )
    .fetch_optional(pool)
    .await
    .context("reading an invitation")?;
    Ok(row.map(|r| InvitationPreview {
        tenant: TenantId(r.tenant_id),
        tenant_name: r.tenant_name,
        email: r.email,
        role: r.role,
        invited_by: r.invited_by,
    }))
}

/// Accepts an invitation as `account` (signed in; its address must be the
/// invited one): it joins the team with the invited role, and its address
/// counts as verified (the link came back from it).
pub async fn accept(
    pool: &PgPool,
    token: &LinkToken,
    account: AccountId,
) -> Result<(TenantId, Role), TeamError> {
    let mut tx = pool.begin().await.context("starting an acceptance")?;
    let invitation = sqlx::query!(
        r#"SELECT i.tenant_id, i.id, i.email, i.role AS "role: Role"
           FROM directory.secrets d
           JOIN tenant_invitations i ON i.tenant_id = d.tenant_id AND i.digest = d.digest
           WHERE d.digest = $1 AND d.kind = 'invitation'
             AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
           FOR UPDATE OF i"#,
        token.digest(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading an invitation")?
    .ok_or(TeamError::InvitationInvalid)?;
    let email = sqlx::query_scalar!(
        "SELECT email FROM accounts WHERE id = $1 AND disabled_at IS NULL",
        account.0
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the accepting account")?
    .ok_or(TeamError::InvitationInvalid)?;
    if email != invitation.email {
        return Err(TeamError::WrongAccount {
            invited: invitation.email,
        });
    }
    let joined = sqlx::query!(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING",
        invitation.tenant_id,
        account.0,
        invitation.role.as_str(),
    )
    .execute(&mut *tx)
    .await
    .context("joining the team")?;
    if joined.rows_affected() == 0 {
        return Err(TeamError::AlreadyMember);
    }
    sqlx::query!(
        "UPDATE tenant_invitations SET accepted_at = now(), accepted_by = $3
         WHERE tenant_id = $1 AND id = $2",
        invitation.tenant_id,
        invitation.id,
        account.0,
    )
    .execute(&mut *tx)
    .await
    .context("closing the invitation")?;
    sqlx::query!(
        "UPDATE accounts SET email_verified_at = coalesce(email_verified_at, now()) WHERE id = $1",
        account.0,
    )
    .execute(&mut *tx)
    .await
    .context("verifying the invited address")?;
    let tenant = TenantId(invitation.tenant_id);
    audit::admin_action(
        &mut tx,
        tenant,
        account,
        "member.joined",
        ("account", account.0),
        json!({ "role": invitation.role.as_str(), "invitation": invitation.id }),
    )
    .await?;
    tx.commit().await.context("committing an acceptance")?;
    Ok((tenant, invitation.role))
}

/// Withdraws an open invitation (its link stops working).
pub async fn revoke_invitation(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    invitation: Uuid,
) -> Result<(), TeamError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let email = sqlx::query_scalar!(
        "UPDATE tenant_invitations SET revoked_at = now()
         WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL AND revoked_at IS NULL
         RETURNING email",
        tenant.0,
        invitation,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("revoking an invitation")?
    .ok_or(TeamError::InvitationNotFound)?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "member.invitation_revoked",
        ("invitation", invitation),
        json!({ "email": email }),
    )
    .await?;
    tx.commit().await.context("committing the revocation")?;
    Ok(())
}

/// Gives `member` another role. Refused ([`TeamError::LastOwner`]) if it
/// would leave the tenant without an owner.
pub async fn change_role(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    member: AccountId,
    role: Role,
) -> Result<(), TeamError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let changed = sqlx::query_scalar!(
        r#"WITH old AS (
               SELECT role FROM tenant_members WHERE tenant_id = $1 AND account_id = $2 FOR UPDATE
           )
           UPDATE tenant_members m SET role = $3
           FROM old
           WHERE m.tenant_id = $1 AND m.account_id = $2
           RETURNING old.role AS "from: Role""#,
        tenant.0,
        member.0,
        role.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await;
    let from = match changed {
        Ok(Some(from)) => from,
        Ok(None) => return Err(TeamError::MemberNotFound),
        Err(error) if keeps_an_owner(&error) => return Err(TeamError::LastOwner),
        Err(error) => return Err(anyhow::Error::new(error).context("changing a role").into()),
    };
    if from != role {
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            "member.role_changed",
            ("account", member.0),
            json!({ "from": from.as_str(), "to": role.as_str() }),
        )
        .await?;
    }
    tx.commit().await.context("committing a role change")?;
    Ok(())
}

/// Takes `member` off the team (an owner removing someone, or a member
/// leaving: `actor == member`). Refused ([`TeamError::LastOwner`]) for the
/// last owner. Their API tokens stop working with the membership.
pub async fn remove(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    member: AccountId,
) -> Result<(), TeamError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let removed = sqlx::query_scalar!(
        r#"DELETE FROM tenant_members WHERE tenant_id = $1 AND account_id = $2
           RETURNING role AS "role: Role""#,
        tenant.0,
        member.0,
    )
    .fetch_optional(&mut *tx)
    .await;
    let role = match removed {
        Ok(Some(role)) => role,
        Ok(None) => return Err(TeamError::MemberNotFound),
        Err(error) if keeps_an_owner(&error) => return Err(TeamError::LastOwner),
        Err(error) => {
            return Err(anyhow::Error::new(error)
                .context("removing a member")
                .into());
        }
    };
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        if actor == member {
            "member.left"
        } else {
            "member.removed"
        },
        ("account", member.0),
        json!({ "role": role.as_str() }),
    )
    .await?;
    tx.commit().await.context("committing a removal")?;
    Ok(())
}
