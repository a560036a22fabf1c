//! The admin's side of a transfer: approving or refusing a confirmed
//! request.
//!
//! Approval is the one place a transfer changes a binding: on the audited
//! unbind path, in one transaction, taking its locks in the order every
//! path takes them (the code's row, then its requests'). The module docs
//! of [`super`] say what it checks and why; [`approve`] reads as those
//! checks and changes, in order, each a step below it. A refusal
//! ([`refuse`]) changes the request alone.

use anyhow::Context as _;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Transfer, TransferError, TransferStatus, check_reason, read::load};
use crate::{
    accounts::AccountId,
    audit::{self, AuditEntry},
    mail::{self, Template},
    tenants::TenantId,
};

/// An admin approves a confirmed request: the binding moves to the target
/// in this one transaction (see the module's docs). `limit` is the
/// per-code limit in force now.
pub async fn approve(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
    reason: Option<&str>,
    limit: u16,
) -> Result<Transfer, TransferError> {
    let reason = optional_reason(reason)?;
    let mut tx = pool.begin().await.context("starting an approval")?;
    // Locks in the order every path takes them: the code's row, then its
    // requests' (a learner asking again, an unbind or a revocation lock the
    // code, then change its requests; the other order could deadlock).
    let held = lock_code_of(&mut tx, tenant, id).await?;
    let (share, _, from, to) = lock_awaiting_admin(&mut tx, tenant, id).await?;
    check_movable(&held, from, limit)?;
    check_target(&mut tx, tenant, to).await?;
    let approval = Approval {
        tenant,
        id,
        share,
        code: held.id,
        from,
        to,
    };
    move_binding(&mut tx, &approval).await?;
    end_holder_grants(&mut tx, &approval).await?;
    let ordinal = close_approved(&mut tx, &approval, actor, reason, held.moved, limit).await?;
    record_move(&mut tx, &approval, actor, reason, ordinal).await?;
    let transfer = load(&mut tx, tenant, id).await?;
    tell_both(&mut tx, &approval, &transfer).await?;
    tx.commit().await.context("committing an approval")?;
    Ok(transfer)
}

/// The request being approved and the move it makes: its code, of which
/// share, from which account to which.
struct Approval {
    tenant: TenantId,
    id: Uuid,
    share: Uuid,
    code: Uuid,
    from: AccountId,
    to: AccountId,
}

/// The code of the request being approved, its row locked.
struct LockedCode {
    id: Uuid,
    bound_principal: Option<Uuid>,
    revoked: bool,
    /// How many times the code was moved already (approved requests).
    moved: i64,
}

/// An approval's reason is optional: none when blank, else checked.
fn optional_reason(reason: Option<&str>) -> Result<Option<&str>, TransferError> {
    match reason.map(str::trim) {
        None | Some("") => Ok(None),
        Some(reason) => Ok(Some(check_reason(reason)?)),
    }
}

/// Finds the request's code, opens the audited unbind path for this
/// transaction and locks the code's row, counting its moves under the lock.
async fn lock_code_of(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    id: Uuid,
) -> Result<LockedCode, TransferError> {
    let code = sqlx::query_scalar!(
        "SELECT code_id FROM transfer_requests WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
    )
    .fetch_optional(&mut *conn)
    .await
    .context("reading a transfer request")?
    .ok_or(TransferError::NotFound)?;
    // The audited unbind path, for this transaction only: the one way a
    // bound code's learner may change (`auth_codes_keep_binding`).
    crate::code_actions::open_unbind(&mut *conn).await?;
    let held = sqlx::query!(
        r#"SELECT bound_principal, revoked_at IS NOT NULL AS "revoked!",
                  (SELECT count(*) FROM transfer_requests r
                    WHERE r.tenant_id = c.tenant_id AND r.code_id = c.id
                      AND r.status = 'approved') AS "moved!"
           FROM auth_codes c WHERE tenant_id = $1 AND id = $2 FOR UPDATE"#,
        tenant.0,
        code,
    )
    .fetch_one(&mut *conn)
    .await
    .context("locking the code")?;
    Ok(LockedCode {
        id: code,
        bound_principal: held.bound_principal,
        revoked: held.revoked,
        moved: held.moved,
    })
}

/// Locks a request of `tenant` that waits for an admin, or says why not.
async fn lock_awaiting_admin(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    id: Uuid,
) -> Result<(Uuid, Uuid, AccountId, AccountId), TransferError> {
    let row = sqlx::query!(
        r#"SELECT share_id, code_id, from_account, to_account, status AS "status: TransferStatus"
           FROM transfer_requests WHERE tenant_id = $1 AND id = $2 FOR UPDATE"#,
        tenant.0,
        id,
    )
    .fetch_optional(&mut *conn)
    .await
    .context("locking a transfer request")?
    .ok_or(TransferError::NotFound)?;
    match (row.status, row.to_account) {
        (TransferStatus::AwaitingAdmin, Some(to)) => Ok((
            row.share_id,
            row.code_id,
            AccountId(row.from_account),
            AccountId(to),
        )),
        (status, _) => Err(TransferError::NotOpen { status }),
    }
}

/// The code may move: still live and the holder's, transfers open here,
/// and moved fewer than `limit` times.
fn check_movable(held: &LockedCode, from: AccountId, limit: u16) -> Result<(), TransferError> {
    if held.revoked || held.bound_principal != Some(from.0) {
        return Err(TransferError::CodeChanged);
    }
    if limit == 0 {
        return Err(TransferError::Closed);
    }
    if held.moved >= i64::from(limit) {
        return Err(TransferError::LimitReached { limit });
    }
    Ok(())
}

/// The receiving account may take the code: neither disabled nor
/// suspended by the tenant.
async fn check_target(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    to: AccountId,
) -> Result<(), TransferError> {
    let target = sqlx::query!(
        r#"SELECT a.disabled_at IS NOT NULL AS "disabled!",
                  EXISTS (SELECT 1 FROM suspended_learners l
                          WHERE l.tenant_id = $1 AND l.account_id = a.id) AS "suspended!"
           FROM accounts a WHERE a.id = $2"#,
        tenant.0,
        to.0,
    )
    .fetch_one(&mut *conn)
    .await
    .context("reading the receiving account")?;
    if target.disabled || target.suspended {
        return Err(TransferError::TargetBlocked);
    }
    Ok(())
}

/// Moves the binding from the holder to the target (a compare-and-set on
/// the holder).
async fn move_binding(
    conn: &mut sqlx::PgConnection,
    approval: &Approval,
) -> Result<(), TransferError> {
    // The compare-and-set on the binding. The target's own first access
    // racing this one meets it on `auth_codes_one_per_learner`: whichever
    // commits first wins, the other sees a unique violation.
    let moved = sqlx::query!(
        "UPDATE auth_codes SET bound_principal = $4
         WHERE tenant_id = $1 AND id = $2 AND bound_principal = $3",
        approval.tenant.0,
        approval.code,
        approval.from.0,
        approval.to.0,
    )
    .execute(&mut *conn)
    .await;
    match moved {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("auth_codes_one_per_learner") => {
            Err(TransferError::TargetHasCode)
        }
        Err(e) => Err(anyhow::Error::new(e).context("moving the binding").into()),
    }
}

/// Ends the holder's live grants through the code.
async fn end_holder_grants(
    conn: &mut sqlx::PgConnection,
    approval: &Approval,
) -> anyhow::Result<()> {
    // The holder loses access now; the target opens the course afresh.
    sqlx::query!(
        "UPDATE access_records SET expires_at = now()
         WHERE tenant_id = $1 AND code_id = $2 AND principal_id = $3 AND expires_at > now()",
        approval.tenant.0,
        approval.code,
        approval.from.0,
    )
    .execute(&mut *conn)
    .await
    .context("ending the holder's live grants")?;
    Ok(())
}

/// Closes the request as approved, numbered as the code's `moved + 1`th
/// move under `limit`. Returns that number.
async fn close_approved(
    conn: &mut sqlx::PgConnection,
    approval: &Approval,
    actor: AccountId,
    reason: Option<&str>,
    moved: i64,
    limit: u16,
) -> anyhow::Result<i16> {
    let ordinal = i16::try_from(moved + 1).context("transfer count above 32767")?;
    let code_limit = i16::try_from(limit).context("transfer limit above 32767")?;
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'approved', decided_at = now(), decided_by = $3, decision_reason = $4,
             ordinal = $5, code_limit = $6
         WHERE tenant_id = $1 AND id = $2",
        approval.tenant.0,
        approval.id,
        actor.0,
        reason,
        ordinal,
        code_limit,
    )
    .execute(&mut *conn)
    .await
    .context("closing the transfer request")?;
    Ok(ordinal)
}

/// Audits the move (`code.transferred`) and announces it (the webhook
/// event of the same name).
async fn record_move(
    conn: &mut sqlx::PgConnection,
    approval: &Approval,
    actor: AccountId,
    reason: Option<&str>,
    ordinal: i16,
) -> anyhow::Result<()> {
    let Approval {
        tenant,
        id,
        share,
        code,
        from,
        to,
    } = *approval;
    audit::record(
        &mut *conn,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action: "code.transferred",
            target_type: "code",
            target_id: Some(code),
            reason,
            details: json!({
                "share_id": share,
                "transfer_id": id,
                "from": from.0,
                "to": to.0,
                "ordinal": ordinal,
            }),
        },
    )
    .await?;
    audit::emit(
        &mut *conn,
        tenant,
        "code.transferred",
        json!({
            "share_id": share,
            "code_id": code,
            "transfer_id": id,
            "from_principal": from.0,
            "to_principal": to.0,
        }),
    )
    .await?;
    Ok(())
}

/// Mails both accounts: the holder that the code moved away, the target
/// that it arrived.
async fn tell_both(
    conn: &mut sqlx::PgConnection,
    approval: &Approval,
    transfer: &Transfer,
) -> anyhow::Result<()> {
    mail::enqueue_code_notice(
        &mut *conn,
        Template::CodeTransferredAway,
        approval.tenant,
        approval.share,
        approval.from,
        json!({ "to_email": transfer.to_email }),
    )
    .await?;
    mail::enqueue_code_notice(
        &mut *conn,
        Template::CodeTransferredHere,
        approval.tenant,
        approval.share,
        approval.to,
        json!({ "from_email": transfer.from_email }),
    )
    .await?;
    Ok(())
}

/// An admin refuses a confirmed request, with a reason both accounts read
/// in their mail. The binding stays where it is.
pub async fn refuse(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
    reason: &str,
) -> Result<Transfer, TransferError> {
    let reason = check_reason(reason)?;
    let mut tx = pool.begin().await.context("starting a refusal")?;
    let (share, code, from, to) = lock_awaiting_admin(&mut tx, tenant, id).await?;
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'refused', decided_at = now(), decided_by = $3, decision_reason = $4
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
        actor.0,
        reason,
    )
    .execute(&mut *tx)
    .await
    .context("refusing a transfer request")?;
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(actor),
            action: "transfer.refused",
            target_type: "transfer",
            target_id: Some(id),
            reason: Some(reason),
            details: json!({ "share_id": share, "code_id": code, "from": from.0, "to": to.0 }),
        },
    )
    .await?;
    let transfer = load(&mut tx, tenant, id).await?;
    for learner in [from, to] {
        mail::enqueue_code_notice(
            &mut tx,
            Template::TransferRefused,
            tenant,
            share,
            learner,
            json!({ "reason": reason, "to_email": transfer.to_email }),
        )
        .await?;
    }
    tx.commit().await.context("committing a refusal")?;
    Ok(transfer)
}
