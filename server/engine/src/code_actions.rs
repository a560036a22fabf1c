//! What an admin does to one code: revoke it, set its expiry date,
//! replace a lost one, and the audited unbind (the only path that may
//! change a binding).
//!
//! Its own module, not part of [`crate::codes`]: that one is a code's
//! format and keyring, with no I/O; this one is rows of `auth_codes` and
//! the audit trail of changing them. Reading them (the code table, its
//! pages, a pasted code found) is [`crate::code_table`]. Its refusals are
//! [`CodeError`]; every query filters by the tenant passed in.

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    codes::{Keyring, PlainCode},
    mail,
    tenants::TenantId,
};

pub use model::CodeState;

/// What refuses an admin's action on one code (and on a learner's
/// access period: `crate::access_period`; a leaked code:
/// `crate::leaks`).
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error("a code's state is one of unused, bound, revoked, expired")]
    InvalidCodeState,
    #[error("no such code")]
    CodeNotFound,
    #[error("this code is not bound to anyone")]
    CodeNotBound,
    /// Only an unused code's date can change: a bound code keeps working
    /// whatever its date, and a revoked one is refused anyway.
    #[error("this code is already bound or revoked: its expiry date no longer applies")]
    CodeNotUnused,
    #[error("only an unused code can be replaced (unbind or revoke the others)")]
    CodeNotReplaceable,
    /// A lost code past its date: its replacement would be expired too.
    #[error(
        "this code's date has passed, and its replacement would be expired too: give it a later date first"
    )]
    CodeExpired,
    #[error("a reason is required (1 to 500 characters)")]
    InvalidReason,
    /// An expiry date is a moment still to come (none: never expires).
    #[error("an expiry date must be in the future")]
    InvalidExpiry,
    /// An extension is to a moment still to come.
    #[error("extend access to a date in the future")]
    InvalidExtension,
    /// The share gives access for good: nothing to extend.
    #[error("this course gives access for good: there is no access period to extend")]
    NoAccessPeriod,
    #[error("no such share")]
    ShareNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<model::InvalidCodeState> for CodeError {
    fn from(_: model::InvalidCodeState) -> Self {
        Self::InvalidCodeState
    }
}

/// Ends every live grant made through `code`: its learner loses access now.
pub(crate) async fn end_live_grants(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE access_records SET expires_at = now() WHERE tenant_id = $1 AND code_id = $2 AND expires_at > now()",
        tenant.0,
        code,
    )
    .execute(conn)
    .await
    .context("ending the code's live grants")?;
    Ok(())
}

/// Revokes a code: it can no longer be bound, and a learner bound to it
/// loses access (audited). Revoking a revoked code changes nothing.
pub async fn revoke_code(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<(), CodeError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    if !revoke_in(&mut tx, tenant, actor, code).await? {
        return Err(CodeError::CodeNotFound);
    }
    tx.commit().await.context("committing the revocation")?;
    Ok(())
}

/// [`revoke_code`] within the caller's transaction (a revoke-and-resend
/// revokes the code it replaces with it): `false` when there is no such
/// code.
pub(crate) async fn revoke_in(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> anyhow::Result<bool> {
    let Some(row) = sqlx::query!(
        r#"WITH before AS (
               SELECT revoked_at IS NOT NULL AS was_revoked FROM auth_codes
               WHERE tenant_id = $1 AND id = $2 FOR UPDATE
           )
           UPDATE auth_codes SET revoked_at = coalesce(revoked_at, now())
           FROM before
           WHERE tenant_id = $1 AND id = $2
           RETURNING share_id, bound_principal, before.was_revoked AS "was_revoked!""#,
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("revoking a code")?
    else {
        return Ok(false);
    };
    end_live_grants(&mut *tx, tenant, code).await?;
    crate::transfers::withdraw_open(&mut *tx, tenant, code, Some(actor)).await?;
    audit::admin_action(
        &mut *tx,
        tenant,
        actor,
        "code.revoked",
        ("code", code),
        json!({ "share_id": row.share_id, "bound_principal": row.bound_principal }),
    )
    .await?;
    audit::emit(
        &mut *tx,
        tenant,
        "code.revoked",
        json!({ "share_id": row.share_id, "code_id": code }),
    )
    .await?;
    // The learner who held it is told, once (not again for a repeat).
    if let (Some(learner), false) = (row.bound_principal, row.was_revoked) {
        mail::enqueue_code_notice(
            &mut *tx,
            mail::Template::CodeRevoked,
            tenant,
            row.share_id,
            AccountId(learner),
            json!({}),
        )
        .await?;
    }
    Ok(true)
}

/// A date an admin sets (an expiry, an extension): a moment still to come,
/// at most a century ahead, as UTC (any offset in, one form stored and
/// compared). `None` when it is not one.
pub(crate) fn future_date(at: OffsetDateTime, now: OffsetDateTime) -> Option<OffsetDateTime> {
    let at = at.checked_to_offset(time::UtcOffset::UTC)?;
    let latest = now.checked_add(time::Duration::days(36_525))?;
    (at > now && at <= latest).then_some(at)
}

/// An expiry date in the past (or more than a century ahead): each error
/// that can carry one says so as its own `InvalidExpiry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastExpiry;

impl From<PastExpiry> for CodeError {
    fn from(_: PastExpiry) -> Self {
        Self::InvalidExpiry
    }
}

/// An expiry date an admin asks for: a moment still to come (at most a
/// century ahead), or none.
pub fn check_expiry(
    expires_at: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Result<Option<OffsetDateTime>, PastExpiry> {
    expires_at
        .map(|at| future_date(at, now).ok_or(PastExpiry))
        .transpose()
}

/// Sets one unused code's own expiry date, overriding its batch's (`None`:
/// the batch's date applies again). Only an unused code's date can change
/// (an expired one included: that is how it comes back); a bound code keeps
/// working whatever its date. Audited.
pub async fn set_code_expiry(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    expires_at: Option<OffsetDateTime>,
) -> Result<(), CodeError> {
    let expires_at = check_expiry(expires_at, OffsetDateTime::now_utc())?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let before = sqlx::query!(
        "SELECT share_id, bound_principal, revoked_at, expires_at FROM auth_codes
         WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(CodeError::CodeNotFound)?;
    if before.bound_principal.is_some() || before.revoked_at.is_some() {
        return Err(CodeError::CodeNotUnused);
    }
    // "In the future" by the database's clock too (the one the trigger
    // and the reconciler read).
    let set = sqlx::query!(
        "UPDATE auth_codes SET expires_at = $3
         WHERE tenant_id = $1 AND id = $2 AND ($3::timestamptz IS NULL OR $3 > clock_timestamp())",
        tenant.0,
        code,
        expires_at,
    )
    .execute(&mut *tx)
    .await
    .context("setting a code's expiry")?;
    if set.rows_affected() == 0 {
        return Err(CodeError::InvalidExpiry);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "code.expiry_changed",
        ("code", code),
        json!({ "share_id": before.share_id, "from": rfc3339(before.expires_at), "to": rfc3339(expires_at) }),
    )
    .await?;
    tx.commit().await.context("committing a code's expiry")?;
    Ok(())
}

/// A moment as RFC 3339 text in UTC, for the audit log and comparisons
/// (`null`: none).
pub(crate) fn rfc3339(at: Option<OffsetDateTime>) -> Option<String> {
    at.and_then(|at| at.checked_to_offset(time::UtcOffset::UTC))
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
}

/// A replacement code: the only value that holds it in plain (its
/// `Debug` hides it).
#[derive(Debug)]
pub struct Replacement {
    pub id: Uuid,
    /// The batch of the code it replaced, and now its own.
    pub batch: Uuid,
    pub plain: PlainCode,
}

/// Replaces a lost, unused code: revokes it and issues one new code in the
/// same batch, atomically (both or neither). Returns the new code, which
/// exists in plain only in this value.
pub async fn replace_code(
    pool: &PgPool,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<Replacement, CodeError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    crate::batches::hold_for_change(&mut tx, tenant, code).await?;
    let old = sqlx::query!(
        r#"SELECT share_id, batch_id, bound_principal, revoked_at, expires_at,
                  coalesce(code_expires_at(tenant_id, batch_id, expires_at) <= now(), false)
                    AS "expired!"
           FROM auth_codes WHERE tenant_id = $1 AND id = $2 FOR UPDATE"#,
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(CodeError::CodeNotFound)?;
    if old.bound_principal.is_some() || old.revoked_at.is_some() {
        return Err(CodeError::CodeNotReplaceable);
    }
    // The replacement takes the lost code's date (its own, else its
    // batch's): past it, the new code would be born expired.
    if old.expired {
        return Err(CodeError::CodeExpired);
    }
    sqlx::query!(
        "UPDATE auth_codes SET revoked_at = now() WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        code,
    )
    .execute(&mut *tx)
    .await
    .context("revoking the lost code")?;
    let (new_id, plain) = insert_replacement(
        &mut tx,
        keyring,
        tenant,
        actor,
        Replaced {
            code,
            share: old.share_id,
            batch: old.batch_id,
            // The lost code's own date, if it had one (else the batch's).
            expires_at: old.expires_at,
        },
        None,
    )
    .await?;
    tx.commit().await.context("committing the replacement")?;
    Ok(Replacement {
        id: new_id,
        batch: old.batch_id,
        plain,
    })
}

/// The code a replacement replaces: where the new code goes, and its date.
pub(crate) struct Replaced {
    pub code: Uuid,
    pub share: Uuid,
    pub batch: Uuid,
    /// The old code's own date (none: its batch's applies).
    pub expires_at: Option<OffsetDateTime>,
}

/// A binding a replacement carries over from the code it replaces.
pub(crate) struct CarriedBinding {
    pub principal: Uuid,
    pub first_used_at: OffsetDateTime,
    pub access_count: i32,
    pub access_until: Option<OffsetDateTime>,
}

/// Inserts the replacement of `old` in its batch (bound when `carried`:
/// only inside the audited unbind path, see `auth_codes_refuse_expired`),
/// audits `code.replaced` and announces it. Returns the new code's id and
/// its only plain copy.
pub(crate) async fn insert_replacement(
    tx: &mut sqlx::PgConnection,
    keyring: &Keyring,
    tenant: TenantId,
    actor: AccountId,
    old: Replaced,
    carried: Option<&CarriedBinding>,
) -> anyhow::Result<(Uuid, PlainCode)> {
    let new_id = Uuid::now_v7();
    let plain = PlainCode::generate();
    let (version, digest) = keyring.digest(&plain);
    sqlx::query!(
        "INSERT INTO auth_codes (tenant_id, id, share_id, batch_id, digest, key_version, hint,
                                 expires_at, bound_principal, first_used_at, access_count, access_until,
                                 addressed_to)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce($11, 0), $12,
                 (SELECT o.addressed_to FROM auth_codes o WHERE o.tenant_id = $1 AND o.id = $13))",
        tenant.0,
        new_id,
        old.share,
        old.batch,
        digest,
        i16::try_from(version).context("key version above 32767")?,
        plain.hint(),
        old.expires_at,
        carried.map(|b| b.principal),
        carried.map(|b| b.first_used_at),
        carried.map(|b| b.access_count),
        carried.and_then(|b| b.access_until),
        // An unused code's replacement keeps its address (it stays its
        // addressee's); a bound one's is bound already.
        carried.is_none().then_some(old.code),
    )
    .execute(&mut *tx)
    .await
    .context("inserting the replacement")?;
    let principal = carried.map(|b| b.principal);
    audit::admin_action(
        &mut *tx,
        tenant,
        actor,
        "code.replaced",
        ("code", old.code),
        json!({ "share_id": old.share, "replacement": new_id, "principal": principal }),
    )
    .await?;
    audit::emit(
        &mut *tx,
        tenant,
        "code.replaced",
        json!({
            "share_id": old.share,
            "code_id": old.code,
            "replacement_id": new_id,
            "principal": principal,
        }),
    )
    .await?;
    Ok((new_id, plain))
}

/// Unbinds a bound code (the learner changed account): the learner loses
/// access at once; the code becomes usable again, or stays revoked when
/// `revoke` is set. The only path that may change a binding (see the
/// `auth_codes_keep_binding` trigger); audited with its reason. Returns the
/// code's state afterwards (`unused` or `revoked`).
pub async fn unbind_code(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    reason: &str,
    revoke: bool,
) -> Result<CodeState, CodeError> {
    let reason = check_reason(reason)?;
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let unbound = unbind_in(&mut tx, tenant, actor, code, reason, revoke, true).await?;
    mail::enqueue_code_notice(
        &mut tx,
        mail::Template::CodeUnbound,
        tenant,
        unbound.share_id,
        AccountId(unbound.principal),
        json!({ "reason": reason }),
    )
    .await?;
    tx.commit().await.context("committing the unbind")?;
    Ok(unbound.state)
}

/// An admin's reason for an unbind: 1 to 500 characters, trimmed.
pub(crate) fn check_reason(reason: &str) -> Result<&str, CodeError> {
    audit::reason_text(reason).ok_or(CodeError::InvalidReason)
}

/// What [`unbind_in`] did.
pub(crate) struct Unbound {
    pub share_id: Uuid,
    /// The learner the code was bound to.
    pub principal: Uuid,
    /// The code's state afterwards.
    pub state: CodeState,
}

/// The audited unbind inside the caller's transaction (no mail: the
/// caller says what happened). One of the few places that open the path
/// the `auth_codes_keep_binding` trigger guards ([`open_unbind`] lists
/// them); `reason` is checked.
/// `end_grants`: the learner loses access now (a replacement instead moves
/// their live grants to the new code).
pub(crate) async fn unbind_in(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
    reason: &str,
    revoke: bool,
    end_grants: bool,
) -> Result<Unbound, CodeError> {
    crate::batches::hold_for_change(&mut *tx, tenant, code).await?;
    open_unbind(&mut *tx).await?;
    let before = sqlx::query!(
        "SELECT share_id, bound_principal FROM auth_codes WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking the code")?
    .ok_or(CodeError::CodeNotFound)?;
    let principal = before.bound_principal.ok_or(CodeError::CodeNotBound)?;
    // A seat a refund took back stays taken: unbinding a code of such an
    // order revokes it too, whatever was asked.
    let by_refund = !revoke && crate::refunds::takes_seat_back(&mut *tx, tenant, code).await?;
    let after = clear_binding(tx, tenant, code, revoke || by_refund).await?;
    if by_refund {
        // The order still names whose seat its refund took back.
        crate::refunds::note_released(&mut *tx, tenant, code, principal).await?;
    }
    let revoked = after.revoked;
    // A request to move the code is moot once it is unbound.
    crate::transfers::withdraw_open(&mut *tx, tenant, code, Some(actor)).await?;
    if end_grants {
        end_live_grants(tx, tenant, code).await?;
    }
    audit::record(
        &mut *tx,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action: "code.unbound",
            target_type: "code",
            target_id: Some(code),
            reason: Some(reason),
            // `revoked` is what the code is now (it stays revoked if it
            // was); `revoke_requested` is what the admin asked for.
            details: json!({
                "share_id": before.share_id,
                "principal": principal,
                "revoked": revoked,
                "revoke_requested": revoke,
                "revoked_by_refund": by_refund,
            }),
        },
    )
    .await?;
    audit::emit(
        &mut *tx,
        tenant,
        "code.unbound",
        json!({ "share_id": before.share_id, "code_id": code, "principal": principal }),
    )
    .await?;
    if by_refund {
        // Its order's refund took the seat: say so as the refund would.
        audit::emit(
            &mut *tx,
            tenant,
            "code.revoked",
            json!({ "share_id": before.share_id, "code_id": code }),
        )
        .await?;
    }
    Ok(Unbound {
        share_id: before.share_id,
        principal,
        state: after.state(),
    })
}

/// A code's revocation and date after its unbind.
pub(crate) struct Cleared {
    /// Revoked now (it stays revoked if it was).
    revoked: bool,
    /// Past its date (its own, else its batch's).
    expired: bool,
}

impl Cleared {
    /// The code's state after its unbind.
    fn state(&self) -> CodeState {
        if self.revoked {
            CodeState::Revoked
        } else if self.expired {
            // Past its date: nobody can bind it again (give it a later date of
            // its own to bring it back).
            CodeState::Expired
        } else {
            CodeState::Unused
        }
    }
}

/// Opens the path the `auth_codes_keep_binding` trigger guards, for the
/// rest of the caller's transaction. Only audited changes of a binding
/// open it: an admin's unbind ([`unbind_in`]), a refund taking seats
/// back (`crate::refunds`), and an approved transfer
/// (`crate::transfers`).
pub(crate) async fn open_unbind(tx: &mut sqlx::PgConnection) -> anyhow::Result<()> {
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(tx)
        .await
        .context("opening the unbind path")?;
    Ok(())
}

/// Clears the code's binding and what came with it (first use, accesses,
/// foreign attempts, leak alert, extension), revoking it too when `revoke`
/// is set. The caller opened the unbind path ([`open_unbind`]).
pub(crate) async fn clear_binding(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
    revoke: bool,
) -> anyhow::Result<Cleared> {
    // The binding's extension (`access_until`) goes with it: whoever binds
    // the code next starts from the share's period alone.
    let after = sqlx::query!(
        r#"UPDATE auth_codes
           SET bound_principal = NULL, first_used_at = NULL, access_count = 0,
               foreign_attempts = 0, last_foreign_attempt_at = NULL, leak_alerted_at = NULL,
               access_until = NULL,
               revoked_at = CASE WHEN $3 THEN coalesce(revoked_at, now()) ELSE revoked_at END
           WHERE tenant_id = $1 AND id = $2
           RETURNING revoked_at IS NOT NULL AS "revoked!",
                     coalesce(code_expires_at(tenant_id, batch_id, expires_at) <= now(), false)
                       AS "expired!""#,
        tenant.0,
        code,
        revoke,
    )
    .fetch_one(&mut *tx)
    .await
    .context("unbinding the code")?;
    Ok(Cleared {
        revoked: after.revoked,
        expired: after.expired,
    })
}
