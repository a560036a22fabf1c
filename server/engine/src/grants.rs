//! **The live grant**: what a resource's bytes are served under.
//!
//! Counting happens where a person opens a resource: the settlement
//! (`crate::settlement`), from the resource page or `POST …/open`, binds a
//! pending code, debits, and leaves an access record whose `expires_at` is
//! the grant. The bytes route (a video player's Range requests, a page's
//! frame, a download) only asks [`live`] whether such a grant is still
//! live: one read, no transaction, no row lock, never a write. So a
//! class watching videos costs PostgreSQL reads, not write transactions,
//! and a request from any other site can serve at most what the learner
//! already opened; it can never count, bind or debit.
//!
//! [`live`] checks everything the settlement would refuse on, as of now:
//! the share visible and open (not paused, inside its window), the
//! resource not removed, the account enabled and signed in at its current
//! session epoch ("sign out everywhere" and a password change end it), the
//! learner not suspended, their code of the share bound to them and not
//! revoked, their access period (if the share has one) not over, and an
//! access record of this resource through that code that
//! has not expired (revoking or unbinding a code ends its records). The
//! caller may remember a yes for a documented few seconds (the service
//! layer's grant cache); that is the bound on how fast a revoke reaches a
//! player that is already streaming.

use anyhow::Context as _;
use model::ResourceKind;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    resources::Resource,
    settlement::SettlementError,
    shares::{self, ShareId, ShareStatus},
    tenants::TenantId,
};

/// A live grant of one resource to one learner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveGrant {
    pub tenant: TenantId,
    pub share: ShareId,
    pub resource: Resource,
    pub code_id: Uuid,
    /// When the access the learner opened ends.
    pub expires_at: OffsetDateTime,
}

/// Why the bytes are not served.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    /// No such share, or not one learners can see (a draft, archived).
    #[error("no such course")]
    ShareNotFound,
    #[error("no such resource")]
    ResourceNotFound,
    /// The learner holds no code of the share (one may be pending in their
    /// session: the caller knows).
    #[error("enter your access code first")]
    NotBound { share: ShareId },
    /// The account is gone, or no longer signed in at this session's epoch.
    #[error("your session has ended; sign in again")]
    SessionEnded,
    /// What the settlement would answer: the share paused or closed, the
    /// account disabled or suspended, a revoked code, or no live grant
    /// ([`SettlementError::OpenFromCoursePage`]).
    #[error(transparent)]
    Refused(SettlementError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Whether `principal`, signed in at `session_epoch`, holds a live grant of
/// `resource` in the share at `slug`: one read (see the module doc).
pub async fn live(
    pool: &PgPool,
    slug: &str,
    resource: Uuid,
    principal: AccountId,
    session_epoch: i64,
) -> Result<LiveGrant, GrantError> {
    // Every outer join keeps the share's row, so one row tells every reason.
    let row = sqlx::query!(
        r#"SELECT s.tenant_id, s.id AS share_id,
                  s.status AS "status: ShareStatus", s.valid_from, s.valid_until,
                  r.id AS "resource_id?", r.kind AS "kind?: ResourceKind", r.title AS "resource_title?",
                  r.content_type AS "content_type?", r.size_bytes AS "size_bytes?",
                  r.storage_key AS "storage_key?", r.position AS "position?",
                  a.id IS NOT NULL AND a.session_epoch = $4 AS "signed_in!",
                  a.disabled_at IS NULL AS "active!",
                  EXISTS (SELECT 1 FROM suspended_learners l
                          WHERE l.tenant_id = s.tenant_id AND l.account_id = $3) AS "suspended!",
                  c.id AS "code_id?", c.revoked_at IS NOT NULL AS "revoked?",
                  binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS access_ends,
                  (SELECT max(g.expires_at) FROM access_records g
                    WHERE g.tenant_id = s.tenant_id AND g.share_id = s.id AND g.principal_id = $3
                      AND g.resource_id = r.id AND g.code_id = c.id AND g.expires_at > now())
                    AS "expires_at?"
           FROM directory.share_links d
           JOIN shares s ON s.tenant_id = d.tenant_id AND s.slug = d.slug
           LEFT JOIN resources r
                  ON r.tenant_id = s.tenant_id AND r.share_id = s.id AND r.id = $2 AND r.deleted_at IS NULL
           LEFT JOIN accounts a ON a.id = $3
           LEFT JOIN auth_codes c
                  ON c.tenant_id = s.tenant_id AND c.share_id = s.id AND c.bound_principal = $3
           WHERE d.slug = $1"#,
        slug,
        resource,
        principal.0,
        session_epoch,
    )
    .fetch_optional(pool)
    .await
    .context("reading a live grant")?
    .ok_or(GrantError::ShareNotFound)?;
    if !row.status.visible_to_learners() {
        return Err(GrantError::ShareNotFound);
    }
    if !row.signed_in {
        return Err(GrantError::SessionEnded);
    }
    if !row.active {
        return Err(GrantError::Refused(SettlementError::AccountDisabled));
    }
    let (tenant, share) = (TenantId(row.tenant_id), ShareId(row.share_id));
    if let Some(reason) = shares::unavailable(
        row.status,
        row.valid_from,
        row.valid_until,
        OffsetDateTime::now_utc(),
    ) {
        return Err(GrantError::Refused(SettlementError::ShareUnavailable(
            reason,
        )));
    }
    let (
        Some(id),
        Some(kind),
        Some(title),
        Some(content_type),
        Some(size_bytes),
        Some(storage_key),
        Some(position),
    ) = (
        row.resource_id,
        row.kind,
        row.resource_title,
        row.content_type,
        row.size_bytes,
        row.storage_key,
        row.position,
    )
    else {
        return Err(GrantError::ResourceNotFound);
    };
    if row.suspended {
        return Err(GrantError::Refused(SettlementError::LearnerSuspended));
    }
    let Some(code_id) = row.code_id else {
        return Err(GrantError::NotBound { share });
    };
    if row.revoked == Some(true) {
        return Err(GrantError::Refused(SettlementError::CodeRevoked));
    }
    if let Some(ended_at) = row.access_ends
        && ended_at <= OffsetDateTime::now_utc()
    {
        return Err(GrantError::Refused(SettlementError::AccessEnded {
            ended_at,
        }));
    }
    let Some(expires_at) = row.expires_at else {
        return Err(GrantError::Refused(SettlementError::OpenFromCoursePage));
    };
    Ok(LiveGrant {
        tenant,
        share,
        resource: Resource {
            id,
            share_id: share.0,
            kind,
            title,
            content_type,
            size_bytes,
            storage_key,
            position,
        },
        code_id,
        expires_at,
    })
}
