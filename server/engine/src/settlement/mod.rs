//! Settlement: the moment a code is bound and an access is counted.
//!
//! The three phases of `docs/design/overview.md`: [`validate`] (phase 1: a typed code is looked
//! up, nothing is bound; the caller keeps the code id in the session:
//! phase 2), then [`Settler::settle`] (phase 3) when a person opens a
//! resource (the resource page, `POST …/open`; never its bytes, which
//! `crate::grants` serves under the grant this leaves):
//!
//! 1. a learner with no code pending (a returning one) skips Redis
//!    entirely: the transaction's binding decides;
//! 2. otherwise `reserve.lua` takes the code and the learner for this
//!    attempt, turning away concurrent losers cheaply;
//! 3. **the settlement transaction** ([`Settler::transaction`], one call of
//!    the PL/pgSQL function `settle_access`) checks the session (the
//!    account still at the session's epoch), the share, the resource, the
//!    account and an existing binding, binds with a compare-and-set `UPDATE … WHERE
//!    bound_principal IS NULL`, debits the learner's counter and the
//!    share's quota slot with conditional UPDATEs, writes the access record
//!    (unique per request id) and the outbox rows, and commits, or leaves
//!    nothing behind;
//! 4. `release.lua` frees the reservation, committed or not.
//!
//! A unique violation rolls the transaction back and the settlement starts
//! over, reading the final state afresh (never continuing in the failed
//! transaction). A retry with the same request id finds the first attempt's
//! record and returns it. If Redis fails, [`FailurePolicy`] decides; an
//! unanswered reservation is never taken for a granted one.
//!
//! What one *access* is: a grant of one resource to one learner, valid for
//! [`SettlementOptions::grant_ttl`]. Range requests, reloads and retries of
//! that resource inside the grant's lifetime are not counted again; opening
//! it after the grant expired counts a new access (debiting the learner's
//! limit and the share's quota once).
//!
//! Where each part lives:
//!
//! * this file: the request, its answer ([`Grant`]) and [`SettlementError`];
//!   phase 1 ([`validate`]) and the reads of a binding ([`binding_of`],
//!   [`holdings_of`]);
//! * `settler.rs`: [`Settler`] and phase 3 around the transaction (steps 1,
//!   2 and 4: the returning learner, the reservation and its waits, the
//!   release);
//! * `transaction.rs`: **the settlement transaction** (step 3: the call of
//!   `settle_access`, whose statements are `settle_access.sql` beside it,
//!   and the mapping of its answers to a typed outcome), the start-overs
//!   around it and its fault points;
//! * [`patience`]: the one wait schedule for a busy code;
//! * [`options`]: how a settler is configured, and the hooks only tests set
//!   (fault points, the probe).
//!
//! [`FailurePolicy`]: options::FailurePolicy
//! [`SettlementOptions::grant_ttl`]: options::SettlementOptions::grant_ttl

use anyhow::Context as _;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    codes::{Keyring, TypedCode},
    shares::{Share, ShareStatus},
};

mod answer;
pub mod options;
pub mod patience;
mod settler;
mod transaction;

// A facade, not a shortcut: `Settler`'s code is spread over `settler.rs`
// (around the transaction) and `transaction.rs` (the transaction) for
// reading; callers know one type, `settlement::Settler`.
pub use settler::Settler;

use patience::Patience;

/// One first-access (or returning) request for a resource.
#[derive(Debug, Clone)]
pub struct SettlementRequest {
    pub share: Share,
    pub principal: AccountId,
    /// The account's session epoch the session was signed in with: the
    /// settlement refuses ([`SettlementError::SessionEnded`]) once the
    /// account moved past it, so the caller needs no read of its own.
    pub session_epoch: i64,
    pub resource: Uuid,
    /// The code id from phase 2 (the session), if any.
    pub pending_code: Option<Uuid>,
    /// Random per logical attempt, reused by its retries.
    pub request_id: RequestId,
    /// What to do while someone else's attempt holds the code.
    pub patience: Patience,
    /// Whether this request may count a new access.
    pub counting: Counting,
}

/// Whether a request may count a new access (and so bind or debit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// The learner opened the resource here: without a live grant, one new
    /// access is counted.
    Allowed,
    /// The request came from another site (a link or an embed anywhere,
    /// which `SameSite=Lax` lets through with the cookie): only a live
    /// grant serves it, so no website can spend a learner's accesses or the
    /// share's quota. It never binds, counts or debits.
    LiveGrantOnly,
}

/// A request id: 1 to 200 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    pub fn parse(raw: &str) -> Result<Self, SettlementError> {
        let ok = (1..=200).contains(&raw.len()) && raw.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| Self(raw.to_owned()))
            .ok_or(SettlementError::InvalidRequestId)
    }

    pub fn generate() -> Self {
        Self(Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Access granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub code_id: Uuid,
    /// This request bound the code.
    pub bound_now: bool,
    /// This request counted a new access (false: a live grant was reused).
    pub counted: bool,
    /// This request is a retry answered from the first attempt's record.
    pub replayed: bool,
    pub expires_at: OffsetDateTime,
    /// The learner's binding as the settlement left it (its access count
    /// includes this access), from the same call: the opening needs no
    /// second read.
    pub binding: BindingView,
}

#[derive(Debug, thiserror::Error)]
pub enum SettlementError {
    #[error("enter your access code first")]
    CodeRequired,
    #[error("this code is already used by another account")]
    CodeBound,
    #[error("this code was revoked by the course provider")]
    CodeRevoked,
    /// An addressed code typed by an account other than its addressee's
    /// (the answer names neither the address nor anyone).
    #[error(
        "this code was sent to someone else: sign in with the account of the address it was sent to, or ask the course provider"
    )]
    CodeAddressedElsewhere,
    /// Unused past its date (its own, or its batch's). A code bound before
    /// its date keeps working.
    #[error("this code has expired; ask the course provider for a new one")]
    CodeExpired,
    /// The share's access period (counted from the first access) is over
    /// for this learner, unless extended. The binding stays.
    #[error(
        "your access to this course ended on {} (UTC); ask the course provider if you need more time",
        ended_at.date()
    )]
    AccessEnded { ended_at: OffsetDateTime },
    #[error("this code does not belong to this course")]
    WrongShare,
    #[error("this code is not valid")]
    InvalidCode,
    #[error("you already have access to this course")]
    AlreadyHasAccess,
    #[error("{0}")]
    ShareUnavailable(crate::shares::Unavailability),
    #[error("this course has reached its access limit")]
    QuotaExhausted,
    #[error("you have used all your accesses to this course")]
    LearnerLimitReached,
    #[error("this account is disabled")]
    AccountDisabled,
    /// The account moved past the session's epoch ("sign out everywhere",
    /// a new password) or is gone: the caller ends the session.
    #[error("your session has ended; sign in again")]
    SessionEnded,
    /// The course provider suspended this learner (their courses only).
    #[error("the course provider has suspended your access to its courses; contact them")]
    LearnerSuspended,
    /// A code binds only to a verified address (unless the tenant waives
    /// it); the pending code stays for after the verification.
    #[error("verify your email address first: open the link we sent you, then open this again")]
    EmailNotVerified,
    #[error("no such resource")]
    ResourceNotFound,
    /// [`Counting::LiveGrantOnly`], and no grant of the resource is live.
    #[error("open this resource from its course page")]
    OpenFromCoursePage,
    #[error(
        "this request id was already used for another request, or its access has ended; retry with a new one"
    )]
    RequestIdReused,
    #[error("a request id is 1 to 200 visible characters")]
    InvalidRequestId,
    /// Another attempt holds the code or the learner right now.
    #[error("someone is using this code right now; try again in a moment")]
    Busy,
    /// Redis (fail-closed) or PostgreSQL cannot serve now.
    #[error("the service is degraded; try again in a moment")]
    Unavailable,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// What phase 1 found a typed code to be, for this learner: all the next
/// step needs, so nobody reads the binding again to decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validated {
    /// Unbound, and the learner holds no code of this share: keep its id
    /// pending in the session (phase 2).
    Usable(Uuid),
    /// Already bound to this learner: nothing to keep.
    AlreadyYours(Uuid),
}

/// Phase 1: what a typed code is, for this learner in this share. Binds
/// nothing. Refusals are errors; the two ways a code can be fine are
/// [`Validated`].
pub async fn validate(
    pool: &PgPool,
    keyring: &Keyring,
    share: &Share,
    principal: AccountId,
    code: &TypedCode,
) -> Result<Validated, SettlementError> {
    if let Some(reason) = share.unavailable_because(OffsetDateTime::now_utc()) {
        return Err(SettlementError::ShareUnavailable(reason));
    }
    let candidates = keyring.lookup(code, share.tenant_id);
    let found = sqlx::query!(
        r#"SELECT id, tenant_id, share_id, bound_principal, revoked_at IS NOT NULL AS "revoked!",
                  coalesce(code_expires_at(tenant_id, batch_id, expires_at) <= now(), false) AS "expired!",
                  -- Addressed to someone else (the learner's address is
                  -- compared, not read out: it never leaves the database).
                  coalesce(addressed_to <> (SELECT a.email FROM accounts a WHERE a.id = $4), false)
                      AS "addressed_elsewhere!"
           FROM auth_codes WHERE tenant_id = $3 AND digest = ANY($1)
           -- Text that reads two ways (ours, and an imported code) finds
           -- this share's code first, and a bound one before an unbound
           -- one (imports refuse such twins; this is the backstop).
           ORDER BY share_id = $2 DESC, bound_principal IS NOT NULL DESC, id LIMIT 1"#,
        &candidates,
        share.id.0,
        share.tenant_id.0,
        principal.0,
    )
    .fetch_optional(pool)
    .await
    .context("looking a code up")?;
    let Some(found) = found else {
        return Err(SettlementError::InvalidCode);
    };
    if found.tenant_id != share.tenant_id.0 || found.share_id != share.id.0 {
        return Err(SettlementError::WrongShare);
    }
    if found.revoked {
        return Err(SettlementError::CodeRevoked);
    }
    match found.bound_principal {
        Some(p) if p == principal.0 => return Ok(Validated::AlreadyYours(found.id)),
        Some(_) => {
            // The leak signal: someone else holds this code's text (and,
            // when they keep trying, the owners hear of it).
            crate::leaks::note_foreign_attempt(pool, share.tenant_id, found.id).await?;
            crate::metrics::leak_signal();
            return Err(SettlementError::CodeBound);
        }
        // Refused here for a clear message; the binding's triggers decide.
        None if found.expired => return Err(SettlementError::CodeExpired),
        None if found.addressed_elsewhere => {
            // Someone other than its addressee holds this code's text.
            crate::leaks::note_foreign_attempt(pool, share.tenant_id, found.id).await?;
            crate::metrics::leak_signal();
            return Err(SettlementError::CodeAddressedElsewhere);
        }
        None => {}
    }
    if binding_of(pool, share, principal).await?.is_some() {
        return Err(SettlementError::AlreadyHasAccess);
    }
    Ok(Validated::Usable(found.id))
}

/// The code bound to `principal` in `share`, if any.
pub async fn binding_of(
    pool: &PgPool,
    share: &Share,
    principal: AccountId,
) -> anyhow::Result<Option<BindingView>> {
    sqlx::query_as!(
        BindingView,
        r#"SELECT c.id AS code_id, c.hint, c.first_used_at AS "bound_at!", c.access_count,
                  c.revoked_at IS NOT NULL AS "revoked!",
                  binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS access_ends
           FROM auth_codes c JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           WHERE c.tenant_id = $1 AND c.share_id = $2 AND c.bound_principal = $3
             AND c.bound_principal IS NOT NULL"#,
        share.tenant_id.0,
        share.id.0,
        principal.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading a learner's binding")
}

/// Every share `principal` holds a code of, in every tenant, most recently
/// bound first ("My courses"). Bounded: nobody holds thousands of courses.
pub async fn holdings_of(pool: &PgPool, principal: AccountId) -> anyhow::Result<Vec<Holding>> {
    sqlx::query_as!(
        Holding,
        r#"SELECT s.slug, s.title, s.status AS "status: ShareStatus", t.name AS tenant_name, c.hint,
                  c.first_used_at AS "bound_at!", c.revoked_at IS NOT NULL AS "revoked!",
                  binding_access_ends(c.first_used_at, c.access_until, s.access_days) AS access_ends
           FROM auth_codes c
           JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           JOIN tenants t ON t.id = c.tenant_id
           WHERE c.bound_principal = $1
           ORDER BY c.first_used_at DESC
           LIMIT 500"#,
        principal.0,
    )
    .fetch_all(pool)
    .await
    .context("listing a learner's courses")
}

/// Courses waiting for a learner: for each active share they hold no code
/// of, a code addressed to their address, unused and live (a buyer who
/// signs up after the shop mailed them is told the course waits; the
/// code itself is only in the mail). Only for a verified address: an
/// account that merely names an address learns nothing of what was sent
/// to it. Bounded, oldest code first per share.
pub async fn waiting_for(pool: &PgPool, principal: AccountId) -> anyhow::Result<Vec<Waiting>> {
    sqlx::query_as!(
        Waiting,
        r#"SELECT DISTINCT ON (c.tenant_id, c.share_id)
                  s.slug, s.title, t.name AS tenant_name, c.hint, a.email
           FROM accounts a
           JOIN auth_codes c ON c.addressed_to = a.email
                            AND c.bound_principal IS NULL AND c.revoked_at IS NULL
           JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id AND s.status = 'active'
           JOIN tenants t ON t.id = c.tenant_id
           WHERE a.id = $1 AND a.email_verified_at IS NOT NULL
             AND coalesce(code_expires_at(c.tenant_id, c.batch_id, c.expires_at) > now(), true)
             AND NOT EXISTS (SELECT 1 FROM auth_codes h
                              WHERE h.tenant_id = c.tenant_id AND h.share_id = c.share_id
                                AND h.bound_principal = a.id)
           ORDER BY c.tenant_id, c.share_id, c.id
           LIMIT 100"#,
        principal.0,
    )
    .fetch_all(pool)
    .await
    .context("listing the courses waiting for a learner")
}

/// A course whose code was addressed to a learner, not yet redeemed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub slug: String,
    pub title: String,
    pub tenant_name: String,
    /// The code's hint, as the mail that carried it names it.
    pub hint: String,
    /// The learner's address, the code's.
    pub email: String,
}

/// One share a learner holds a code of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holding {
    pub slug: String,
    pub title: String,
    pub status: ShareStatus,
    pub tenant_name: String,
    pub hint: String,
    pub bound_at: OffsetDateTime,
    pub revoked: bool,
    /// When the learner's access ends (`None`: for good).
    pub access_ends: Option<OffsetDateTime>,
}

impl Holding {
    /// When the learner's access ended, if it has.
    pub fn ended_at(&self) -> Option<OffsetDateTime> {
        self.access_ends
            .filter(|at| *at <= OffsetDateTime::now_utc())
    }
}

/// A learner's binding in a share, as the learner sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct BindingView {
    pub code_id: Uuid,
    pub hint: String,
    #[serde(with = "time::serde::rfc3339")]
    pub bound_at: OffsetDateTime,
    pub access_count: i32,
    pub revoked: bool,
    /// When this learner's access ends (the share's access period from the
    /// first access, or a later date an admin extended it to); `None`:
    /// for good.
    #[serde(with = "time::serde::rfc3339::option")]
    pub access_ends: Option<OffsetDateTime>,
}

impl BindingView {
    /// Whether the learner's access period is over (the binding stays).
    pub fn access_ended(&self) -> bool {
        self.access_ends
            .is_some_and(|at| at <= OffsetDateTime::now_utc())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_bounded_visible_ascii() {
        assert!(RequestId::parse("abc-123").is_ok());
        assert!(RequestId::parse("").is_err());
        assert!(RequestId::parse("a b").is_err());
        assert!(RequestId::parse(&"x".repeat(201)).is_err());
        assert!(RequestId::parse("ключ").is_err());
        assert_ne!(RequestId::generate(), RequestId::generate());
    }
}
