//! The learner's side of a transfer: asking, the confirmation link, and
//! withdrawing.
//!
//! Everything here happens before an admin looks at the request: the
//! holder asks ([`request()`]) and may withdraw ([`cancel`]); the target
//! opens the link ([`preview`]) and confirms ([`confirm`]). An admin
//! unbinding or revoking the code withdraws its open requests
//! ([`withdraw_open`]). What an admin decides is in `decide.rs`.

use anyhow::Context as _;
use model::Lang;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Transfer, TransferError, check_note, read::load};
use crate::{
    accounts::{
        AccountId, Email,
        links::{LinkKey, LinkPurpose, LinkToken},
    },
    audit::{self, AuditEntry},
    mail::{self, NewMail, Template},
    shares::ShareId,
    tenants::TenantId,
};

/// The holder of a code of `share` asks to move it to the account with
/// address `to` (it need not exist yet: the link waits for it). A newer
/// request replaces the open one. The link goes to `to`, in its account's
/// language if it has one, else in `lang` (the asker's). Returns the
/// request's id.
#[expect(
    clippy::too_many_arguments,
    reason = "one use case's inputs, each distinct"
)]
pub async fn request(
    pool: &PgPool,
    links: &LinkKey,
    tenant: TenantId,
    share: ShareId,
    from: AccountId,
    to: &Email,
    note: &str,
    limit: u16,
    lang: Lang,
) -> Result<Uuid, TransferError> {
    let note = check_note(note)?;
    if limit == 0 {
        return Err(TransferError::Closed);
    }
    let ask = Ask {
        tenant,
        share,
        from,
        to,
    };
    let mut tx = pool.begin().await.context("starting a transfer request")?;
    let held = lock_held_code(&mut tx, &ask, limit).await?;
    replace_open_request(&mut tx, &ask, held.id).await?;
    let id = store_request(&mut tx, links, &ask, held.id, note).await?;
    send_link(&mut tx, &ask, &held, id, lang).await?;
    record_request(&mut tx, &ask, held.id, id).await?;
    tx.commit().await.context("committing a transfer request")?;
    Ok(id)
}

/// Who asks to move their code of which share to which address: what the
/// steps of [`request()`] share.
struct Ask<'a> {
    tenant: TenantId,
    share: ShareId,
    from: AccountId,
    to: &'a Email,
}

/// The asker's code, locked, with the names the link's mail shows.
struct Held {
    id: Uuid,
    email: String,
    title: String,
    tenant_name: String,
    /// The language of the account at the target address, if there is one.
    target_lang: Option<String>,
}

/// Locks the asker's live code of the share, or says why it may not move:
/// none held, the asker suspended, the target the asker's own address, or
/// moved `limit` times already.
async fn lock_held_code(
    conn: &mut sqlx::PgConnection,
    ask: &Ask<'_>,
    limit: u16,
) -> Result<Held, TransferError> {
    let held = sqlx::query!(
        r#"SELECT c.id, a.email, s.title, t.name AS tenant_name,
                  (SELECT lang FROM accounts WHERE email = $4) AS target_lang,
                  EXISTS (SELECT 1 FROM suspended_learners l
                          WHERE l.tenant_id = c.tenant_id AND l.account_id = c.bound_principal)
                    AS "suspended!",
                  (SELECT count(*) FROM transfer_requests r
                    WHERE r.tenant_id = c.tenant_id AND r.code_id = c.id
                      AND r.status = 'approved') AS "moved!"
           FROM auth_codes c
           JOIN accounts a ON a.id = c.bound_principal
           JOIN shares s ON s.tenant_id = c.tenant_id AND s.id = c.share_id
           JOIN tenants t ON t.id = c.tenant_id
           WHERE c.tenant_id = $1 AND c.share_id = $2 AND c.bound_principal = $3
             AND c.revoked_at IS NULL
           FOR UPDATE OF c"#,
        ask.tenant.0,
        ask.share.0,
        ask.from.0,
        ask.to.as_str(),
    )
    .fetch_optional(&mut *conn)
    .await
    .context("reading the code to move")?
    .ok_or(TransferError::NotHolder)?;
    if held.suspended {
        return Err(TransferError::HolderSuspended);
    }
    if held.email == ask.to.as_str() {
        return Err(TransferError::SameAccount);
    }
    if held.moved >= i64::from(limit) {
        return Err(TransferError::LimitReached { limit });
    }
    Ok(Held {
        id: held.id,
        email: held.email,
        title: held.title,
        tenant_name: held.tenant_name,
        target_lang: held.target_lang,
    })
}

/// Cancels the code's open request, if any: the new one replaces it.
async fn replace_open_request(
    conn: &mut sqlx::PgConnection,
    ask: &Ask<'_>,
    code: Uuid,
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'cancelled', decided_at = now(), decided_by = $3
         WHERE tenant_id = $1 AND code_id = $2 AND status IN ('awaiting_target', 'awaiting_admin')",
        ask.tenant.0,
        code,
        ask.from.0,
    )
    .execute(&mut *conn)
    .await
    .context("replacing the open transfer request")?;
    Ok(())
}

/// Stores the request, awaiting its target, with the digest of its link
/// (valid for the link's lifetime). Returns its id.
async fn store_request(
    conn: &mut sqlx::PgConnection,
    links: &LinkKey,
    ask: &Ask<'_>,
    code: Uuid,
    note: &str,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                                        note, status, digest, link_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'awaiting_target', $8,
                 now() + make_interval(secs => $9))",
        ask.tenant.0,
        id,
        ask.share.0,
        code,
        ask.from.0,
        ask.to.as_str(),
        note,
        links.digest_of(LinkPurpose::Transfer, id),
        LinkPurpose::Transfer.lifetime().as_seconds_f64(),
    )
    .execute(&mut *conn)
    .await
    .context("storing a transfer request")?;
    Ok(id)
}

/// Mails the confirmation link to the target address, in its account's
/// language if it has one, else in `lang`.
async fn send_link(
    conn: &mut sqlx::PgConnection,
    ask: &Ask<'_>,
    held: &Held,
    id: Uuid,
    lang: Lang,
) -> anyhow::Result<()> {
    mail::enqueue(
        conn,
        NewMail {
            tenant: Some(ask.tenant),
            account: None,
            template: Template::TransferConfirm,
            to: ask.to.as_str(),
            lang: held
                .target_lang
                .as_deref()
                .and_then(Lang::parse)
                .unwrap_or(lang),
            params: json!({
                "course": held.title,
                "tenant": held.tenant_name,
                "from_email": held.email,
            }),
            link: Some(id),
        },
    )
    .await?;
    Ok(())
}

/// Audits the request (`transfer.requested`).
async fn record_request(
    conn: &mut sqlx::PgConnection,
    ask: &Ask<'_>,
    code: Uuid,
    id: Uuid,
) -> anyhow::Result<()> {
    audit::record(
        conn,
        AuditEntry {
            tenant: ask.tenant,
            actor: Some(ask.from),
            action: "transfer.requested",
            target_type: "transfer",
            target_id: Some(id),
            reason: None,
            details: json!({ "share_id": ask.share.0, "code_id": code, "to_email": ask.to.as_str() }),
        },
    )
    .await?;
    Ok(())
}

/// What a confirmation link shows before it is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferPreview {
    pub course: String,
    pub course_slug: String,
    pub tenant_name: String,
    pub from_email: String,
    pub to_email: String,
}

/// The request behind a confirmation link, while it waits for its target.
pub async fn preview(pool: &PgPool, token: &LinkToken) -> anyhow::Result<Option<TransferPreview>> {
    let row = sqlx::query!(
        r#"SELECT s.title, s.slug, t.name AS tenant_name, f.email AS from_email, r.to_email
           FROM directory.secrets d
           JOIN transfer_requests r ON r.tenant_id = d.tenant_id AND r.digest = d.digest
           JOIN shares s ON s.tenant_id = r.tenant_id AND s.id = r.share_id
           JOIN tenants t ON t.id = r.tenant_id
           JOIN accounts f ON f.id = r.from_account
           WHERE d.digest = $1 AND d.kind = 'transfer' AND r.status = 'awaiting_target' AND r.link_expires_at > now()"#,
        token.digest(),
    )
    .fetch_optional(pool)
    .await
    .context("reading a transfer request")?;
    Ok(row.map(|r| TransferPreview {
        course: r.title,
        course_slug: r.slug,
        tenant_name: r.tenant_name,
        from_email: r.from_email,
        to_email: r.to_email,
    }))
}

/// The target confirms, signed in as `account` (its address must be the
/// one the link went to; it counts as verified now, the link came back
/// from it). The request then waits for the tenant's admins.
pub async fn confirm(
    pool: &PgPool,
    token: &LinkToken,
    account: AccountId,
) -> Result<Transfer, TransferError> {
    let mut tx = pool.begin().await.context("starting a confirmation")?;
    let request = sqlx::query!(
        "SELECT r.tenant_id, r.id, r.share_id, r.from_account, r.to_email
         FROM directory.secrets d
         JOIN transfer_requests r ON r.tenant_id = d.tenant_id AND r.digest = d.digest
         WHERE d.digest = $1 AND d.kind = 'transfer'
           AND r.status = 'awaiting_target' AND r.link_expires_at > now()
         FOR UPDATE OF r",
        token.digest(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading a transfer request")?
    .ok_or(TransferError::LinkInvalid)?;
    let email = sqlx::query_scalar!(
        "SELECT email FROM accounts WHERE id = $1 AND disabled_at IS NULL",
        account.0
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the confirming account")?
    .ok_or(TransferError::LinkInvalid)?;
    if email != request.to_email {
        return Err(TransferError::WrongAccount {
            email: request.to_email,
        });
    }
    if account.0 == request.from_account {
        return Err(TransferError::SameAccount);
    }
    if holds_code(&mut tx, request.tenant_id, request.share_id, account).await? {
        return Err(TransferError::TargetHasCode);
    }
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'awaiting_admin', to_account = $3, confirmed_at = now()
         WHERE tenant_id = $1 AND id = $2",
        request.tenant_id,
        request.id,
        account.0,
    )
    .execute(&mut *tx)
    .await
    .context("confirming a transfer request")?;
    sqlx::query!(
        "UPDATE accounts SET email_verified_at = coalesce(email_verified_at, now()) WHERE id = $1",
        account.0,
    )
    .execute(&mut *tx)
    .await
    .context("verifying the confirmed address")?;
    let tenant = TenantId(request.tenant_id);
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(account),
            action: "transfer.confirmed",
            target_type: "transfer",
            target_id: Some(request.id),
            reason: None,
            details: json!({ "share_id": request.share_id, "from": request.from_account }),
        },
    )
    .await?;
    let transfer = load(&mut tx, tenant, request.id).await?;
    tx.commit().await.context("committing a confirmation")?;
    Ok(transfer)
}

/// Whether `account` holds a code of the share (the target may hold one
/// code per course).
async fn holds_code(
    conn: &mut sqlx::PgConnection,
    tenant: Uuid,
    share: Uuid,
    account: AccountId,
) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM auth_codes
                          WHERE tenant_id = $1 AND share_id = $2 AND bound_principal = $3) AS "held!""#,
        tenant,
        share,
        account.0,
    )
    .fetch_one(conn)
    .await
    .context("asking whether the target holds a code")
}

/// The asker withdraws their open request (its link stops working).
pub async fn cancel(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    from: AccountId,
) -> Result<Uuid, TransferError> {
    let mut tx = pool.begin().await.context("starting a cancellation")?;
    let id = sqlx::query_scalar!(
        "UPDATE transfer_requests SET status = 'cancelled', decided_at = now(), decided_by = $3
         WHERE tenant_id = $1 AND share_id = $2 AND from_account = $3
           AND status IN ('awaiting_target', 'awaiting_admin')
         RETURNING id",
        tenant.0,
        share.0,
        from.0,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("cancelling a transfer request")?
    .ok_or(TransferError::NotFound)?;
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(from),
            action: "transfer.cancelled",
            target_type: "transfer",
            target_id: Some(id),
            reason: None,
            details: json!({ "share_id": share.0 }),
        },
    )
    .await?;
    tx.commit().await.context("committing a cancellation")?;
    Ok(id)
}

/// Withdraws the open requests to move `code` (inside the caller's
/// transaction, which holds the code's row): an admin unbound or revoked
/// it, so what the learner asked for no longer exists. `actor` is that
/// admin (`None`: the server itself, a refund's grace ending). Returns how
/// many were withdrawn.
pub(crate) async fn withdraw_open(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
    actor: Option<AccountId>,
) -> anyhow::Result<u64> {
    let done = sqlx::query!(
        "UPDATE transfer_requests SET status = 'cancelled', decided_at = now(), decided_by = $3
         WHERE tenant_id = $1 AND code_id = $2 AND status IN ('awaiting_target', 'awaiting_admin')",
        tenant.0,
        code,
        actor.map(|a| a.0),
    )
    .execute(conn)
    .await
    .context("withdrawing the code's open transfer requests")?;
    Ok(done.rows_affected())
}
