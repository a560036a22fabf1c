//! Transfer requests: a learner moves the code they hold to another
//! account they control.
//!
//! A binding is for good (one code, one account), yet people do lose an
//! address or move to a work account. Three people take part, each proving
//! something:
//!
//! 1. the holder asks ([`request`]), naming the target's address: a
//!    single-use link goes to that address (7 days);
//! 2. the target opens it signed in with that address and confirms
//!    ([`confirm`]): the link came back from the address, so the account
//!    controls it;
//! 3. one of the tenant's admins approves or refuses with a reason
//!    ([`approve`], [`refuse`]).
//!
//! Approval moves the binding in one transaction on the audited unbind
//! path (`admitone.unbind`, the only way past the `auth_codes_keep_binding`
//! trigger): the code's row is locked, it must still be the holder's, the
//! target must not hold a code of the share (the `auth_codes_one_per_learner`
//! index decides a race with the target's own first access), and the code
//! may not have been moved `limit` times already (counted under the row
//! lock, numbered by a unique index). The binding moves whole (first use,
//! accesses counted, extension), so a transfer never resets a limit or an
//! access period; the holder's live grants end at once. Audited
//! (`code.transferred`), announced (webhook `code.transferred`), and both
//! accounts get a mail. The reconciler proves afterwards that every
//! binding is its first binder's or an approved transfer's or a
//! replacement's, and that no code moved more often than its limit
//! ([`crate::invariants`]).

use anyhow::Context as _;
use model::Lang;
pub use model::TransferStatus;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

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

/// Everything a transfer can end in besides success.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The asker holds no live code of this course.
    #[error("you hold no code for this course")]
    NotHolder,
    /// The target is the account that asks.
    #[error("that is the address of this account; name the account the course should move to")]
    SameAccount,
    /// The code was moved as often as the limit allows.
    #[error("this code has been moved as often as allowed ({limit} times); ask the course's team")]
    LimitReached { limit: u16 },
    /// The server lets no code move (`tenants.transfers_per_code = 0`).
    #[error("moving a course to another account is not offered here; ask the course's team")]
    Closed,
    /// The tenant suspended the learner who asks.
    #[error("your access to this organisation's courses is suspended; ask the course's team")]
    HolderSuspended,
    /// The receiving account is suspended by the tenant or disabled.
    #[error("the receiving account is suspended or disabled; refuse the request")]
    TargetBlocked,
    /// The learner's note is over 500 characters.
    #[error("the note is at most 500 characters")]
    InvalidNote,
    /// An admin's reason is empty or over 500 characters.
    #[error("give a reason of 1 to 500 characters")]
    InvalidReason,
    #[error("no such transfer request")]
    NotFound,
    /// The link expired, was replaced or was used.
    #[error("this link has expired, was replaced or was already used; ask for a new one")]
    LinkInvalid,
    /// Signed in with another address than the one the link went to.
    #[error("this request is for {email}; sign in with that address to confirm it")]
    WrongAccount { email: String },
    /// The target holds a code of this course already (one account, one
    /// code per course).
    #[error("the receiving account already has access to this course")]
    TargetHasCode,
    /// The request is not waiting for what was asked (decided, cancelled,
    /// or not confirmed yet).
    #[error("this request is {} and cannot be changed now", status.phrase())]
    NotOpen { status: TransferStatus },
    /// Since the request, the code was unbound or revoked: it no longer
    /// belongs to the asker.
    #[error("the code no longer belongs to the learner who asked; refuse the request")]
    CodeChanged,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The default of `transfers.per_code_limit`: how many times one code may
/// be moved.
pub const DEFAULT_PER_CODE_LIMIT: u16 = 2;

/// The most characters of a learner's note or an admin's reason.
const MAX_TEXT: usize = 500;

/// A person's words may hold line breaks and tabs, but no other control
/// character (PostgreSQL refuses a NUL in `text`: it would be a 500).
fn is_words(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
}

fn check_note(note: &str) -> Result<&str, TransferError> {
    let note = note.trim();
    if note.chars().count() <= MAX_TEXT && is_words(note) {
        Ok(note)
    } else {
        Err(TransferError::InvalidNote)
    }
}

fn check_reason(reason: &str) -> Result<&str, TransferError> {
    let reason = reason.trim();
    if (1..=MAX_TEXT).contains(&reason.chars().count()) && is_words(reason) {
        Ok(reason)
    } else {
        Err(TransferError::InvalidReason)
    }
}

/// A request as the console, the learner's page and the API show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: Uuid,
    pub tenant: TenantId,
    pub share: Uuid,
    pub course: String,
    pub code: Uuid,
    pub code_hint: String,
    pub from_account: AccountId,
    pub from_email: String,
    pub to_email: String,
    pub to_account: Option<AccountId>,
    pub note: String,
    pub status: TransferStatus,
    pub created_at: OffsetDateTime,
    /// The confirmation link stops working then (a request still awaiting
    /// its target after it is as good as cancelled).
    pub link_expires_at: OffsetDateTime,
    pub confirmed_at: Option<OffsetDateTime>,
    pub decided_at: Option<OffsetDateTime>,
    pub decided_by_email: Option<String>,
    pub decision_reason: Option<String>,
}

/// One query of requests, with the names the pages show: `$where` (a
/// literal: `WHERE …`, `ORDER BY …`) appended to the one `SELECT`.
macro_rules! query_transfers {
    ($where:literal, $($arg:expr),+ $(,)?) => {
        sqlx::query!(
            r#"SELECT r.id, r.tenant_id, r.share_id, s.title AS course, r.code_id, c.hint AS code_hint,
                      r.from_account, f.email AS from_email, r.to_email, r.to_account, r.note,
                      r.status AS "status: TransferStatus", r.created_at, r.link_expires_at,
                      r.confirmed_at, r.decided_at, d.email AS "decided_by_email?", r.decision_reason
               FROM transfer_requests r
               JOIN shares s ON s.tenant_id = r.tenant_id AND s.id = r.share_id
               JOIN auth_codes c ON c.tenant_id = r.tenant_id AND c.id = r.code_id
               JOIN accounts f ON f.id = r.from_account
               LEFT JOIN accounts d ON d.id = r.decided_by
               "# + $where,
            $($arg),+
        )
    };
}

macro_rules! transfer_of_row {
    ($r:expr) => {{
        let r = $r;
        Transfer {
            id: r.id,
            tenant: TenantId(r.tenant_id),
            share: r.share_id,
            course: r.course,
            code: r.code_id,
            code_hint: r.code_hint,
            from_account: AccountId(r.from_account),
            from_email: r.from_email,
            to_email: r.to_email,
            to_account: r.to_account.map(AccountId),
            note: r.note,
            status: r.status,
            created_at: r.created_at,
            link_expires_at: r.link_expires_at,
            confirmed_at: r.confirmed_at,
            decided_at: r.decided_at,
            decided_by_email: r.decided_by_email,
            decision_reason: r.decision_reason,
        }
    }};
}

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
    let mut tx = pool.begin().await.context("starting a transfer request")?;
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
        tenant.0,
        share.0,
        from.0,
        to.as_str(),
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the code to move")?
    .ok_or(TransferError::NotHolder)?;
    if held.suspended {
        return Err(TransferError::HolderSuspended);
    }
    if held.email == to.as_str() {
        return Err(TransferError::SameAccount);
    }
    if held.moved >= i64::from(limit) {
        return Err(TransferError::LimitReached { limit });
    }
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'cancelled', decided_at = now(), decided_by = $3
         WHERE tenant_id = $1 AND code_id = $2 AND status IN ('awaiting_target', 'awaiting_admin')",
        tenant.0,
        held.id,
        from.0,
    )
    .execute(&mut *tx)
    .await
    .context("replacing the open transfer request")?;
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                                        note, status, digest, link_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'awaiting_target', $8,
                 now() + make_interval(secs => $9))",
        tenant.0,
        id,
        share.0,
        held.id,
        from.0,
        to.as_str(),
        note,
        links.digest_of(LinkPurpose::Transfer, id),
        LinkPurpose::Transfer.lifetime().as_seconds_f64(),
    )
    .execute(&mut *tx)
    .await
    .context("storing a transfer request")?;
    mail::enqueue(
        &mut tx,
        NewMail {
            tenant: Some(tenant),
            account: None,
            template: Template::TransferConfirm,
            to: to.as_str(),
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
    audit::record(
        &mut tx,
        AuditEntry {
            tenant,
            actor: Some(from),
            action: "transfer.requested",
            target_type: "transfer",
            target_id: Some(id),
            reason: None,
            details: json!({ "share_id": share.0, "code_id": held.id, "to_email": to.as_str() }),
        },
    )
    .await?;
    tx.commit().await.context("committing a transfer request")?;
    Ok(id)
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
           FROM transfer_requests r
           JOIN shares s ON s.tenant_id = r.tenant_id AND s.id = r.share_id
           JOIN tenants t ON t.id = r.tenant_id
           JOIN accounts f ON f.id = r.from_account
           WHERE r.digest = $1 AND r.status = 'awaiting_target' AND r.link_expires_at > now()"#,
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
        "SELECT tenant_id, id, share_id, from_account, to_email FROM transfer_requests
         WHERE digest = $1 AND status = 'awaiting_target' AND link_expires_at > now()
         FOR UPDATE",
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

async fn load(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    id: Uuid,
) -> Result<Transfer, TransferError> {
    let row = query_transfers!("WHERE r.tenant_id = $1 AND r.id = $2", tenant.0, id)
        .fetch_optional(conn)
        .await
        .context("reading a transfer request")?
        .ok_or(TransferError::NotFound)?;
    Ok(transfer_of_row!(row))
}

/// One request of `tenant`.
pub async fn get(pool: &PgPool, tenant: TenantId, id: Uuid) -> Result<Transfer, TransferError> {
    let mut conn = pool.acquire().await.context("acquiring a connection")?;
    load(&mut conn, tenant, id).await
}

/// A tenant's requests, newest first: those in `status`, or all (at most
/// `limit`).
pub async fn list(
    pool: &PgPool,
    tenant: TenantId,
    status: Option<TransferStatus>,
    limit: i64,
) -> anyhow::Result<Vec<Transfer>> {
    let rows = query_transfers!(
        "WHERE r.tenant_id = $1 AND ($2::text IS NULL OR r.status = $2)
         ORDER BY r.created_at DESC, r.id DESC LIMIT $3",
        tenant.0,
        status.map(TransferStatus::as_str),
        limit,
    )
    .fetch_all(pool)
    .await
    .context("listing transfer requests")?;
    Ok(rows.into_iter().map(|row| transfer_of_row!(row)).collect())
}

/// The learner's latest request for their code of `share`, if any (the
/// learner's page shows where it stands).
pub async fn latest_of(
    pool: &PgPool,
    tenant: TenantId,
    share: ShareId,
    from: AccountId,
) -> anyhow::Result<Option<Transfer>> {
    let row = query_transfers!(
        "WHERE r.tenant_id = $1 AND r.share_id = $2 AND r.from_account = $3
         ORDER BY r.created_at DESC, r.id DESC LIMIT 1",
        tenant.0,
        share.0,
        from.0,
    )
    .fetch_optional(pool)
    .await
    .context("reading the learner's transfer request")?;
    Ok(row.map(|row| transfer_of_row!(row)))
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
/// admin. Returns how many were withdrawn.
pub(crate) async fn withdraw_open(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    code: Uuid,
    actor: AccountId,
) -> anyhow::Result<u64> {
    let done = sqlx::query!(
        "UPDATE transfer_requests SET status = 'cancelled', decided_at = now(), decided_by = $3
         WHERE tenant_id = $1 AND code_id = $2 AND status IN ('awaiting_target', 'awaiting_admin')",
        tenant.0,
        code,
        actor.0,
    )
    .execute(conn)
    .await
    .context("withdrawing the code's open transfer requests")?;
    Ok(done.rows_affected())
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
    let reason = match reason.map(str::trim) {
        None | Some("") => None,
        Some(reason) => Some(check_reason(reason)?),
    };
    let mut tx = pool.begin().await.context("starting an approval")?;
    // Locks in the order every path takes them: the code's row, then its
    // requests' (a learner asking again, an unbind or a revocation lock the
    // code, then change its requests; the other order could deadlock).
    let code = sqlx::query_scalar!(
        "SELECT code_id FROM transfer_requests WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading a transfer request")?
    .ok_or(TransferError::NotFound)?;
    // The audited unbind path, for this transaction only: the one way a
    // bound code's learner may change (`auth_codes_keep_binding`).
    sqlx::query("SELECT set_config('admitone.unbind', 'on', true)")
        .execute(&mut *tx)
        .await
        .context("opening the unbind path")?;
    let held = sqlx::query!(
        r#"SELECT bound_principal, revoked_at IS NOT NULL AS "revoked!",
                  (SELECT count(*) FROM transfer_requests r
                    WHERE r.tenant_id = c.tenant_id AND r.code_id = c.id
                      AND r.status = 'approved') AS "moved!"
           FROM auth_codes c WHERE tenant_id = $1 AND id = $2 FOR UPDATE"#,
        tenant.0,
        code,
    )
    .fetch_one(&mut *tx)
    .await
    .context("locking the code")?;
    let (share, _, from, to) = lock_awaiting_admin(&mut tx, tenant, id).await?;
    if held.revoked || held.bound_principal != Some(from.0) {
        return Err(TransferError::CodeChanged);
    }
    if limit == 0 {
        return Err(TransferError::Closed);
    }
    if held.moved >= i64::from(limit) {
        return Err(TransferError::LimitReached { limit });
    }
    let target = sqlx::query!(
        r#"SELECT a.disabled_at IS NOT NULL AS "disabled!",
                  EXISTS (SELECT 1 FROM suspended_learners l
                          WHERE l.tenant_id = $1 AND l.account_id = a.id) AS "suspended!"
           FROM accounts a WHERE a.id = $2"#,
        tenant.0,
        to.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("reading the receiving account")?;
    if target.disabled || target.suspended {
        return Err(TransferError::TargetBlocked);
    }
    // The compare-and-set on the binding. The target's own first access
    // racing this one meets it on `auth_codes_one_per_learner`: whichever
    // commits first wins, the other sees a unique violation.
    let moved = sqlx::query!(
        "UPDATE auth_codes SET bound_principal = $4
         WHERE tenant_id = $1 AND id = $2 AND bound_principal = $3",
        tenant.0,
        code,
        from.0,
        to.0,
    )
    .execute(&mut *tx)
    .await;
    match moved {
        Ok(_) => {}
        Err(sqlx::Error::Database(e)) if e.constraint() == Some("auth_codes_one_per_learner") => {
            return Err(TransferError::TargetHasCode);
        }
        Err(e) => return Err(anyhow::Error::new(e).context("moving the binding").into()),
    }
    // The holder loses access now; the target opens the course afresh.
    sqlx::query!(
        "UPDATE access_records SET expires_at = now()
         WHERE tenant_id = $1 AND code_id = $2 AND principal_id = $3 AND expires_at > now()",
        tenant.0,
        code,
        from.0,
    )
    .execute(&mut *tx)
    .await
    .context("ending the holder's live grants")?;
    let ordinal = i16::try_from(held.moved + 1).context("transfer count above 32767")?;
    let code_limit = i16::try_from(limit).context("transfer limit above 32767")?;
    sqlx::query!(
        "UPDATE transfer_requests
         SET status = 'approved', decided_at = now(), decided_by = $3, decision_reason = $4,
             ordinal = $5, code_limit = $6
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
        actor.0,
        reason,
        ordinal,
        code_limit,
    )
    .execute(&mut *tx)
    .await
    .context("closing the transfer request")?;
    audit::record(
        &mut tx,
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
        &mut tx,
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
    let transfer = load(&mut tx, tenant, id).await?;
    let to_email = transfer.to_email.clone();
    mail::enqueue_code_notice(
        &mut tx,
        Template::CodeTransferredAway,
        tenant,
        share,
        from,
        json!({ "to_email": to_email }),
    )
    .await?;
    mail::enqueue_code_notice(
        &mut tx,
        Template::CodeTransferredHere,
        tenant,
        share,
        to,
        json!({ "from_email": transfer.from_email }),
    )
    .await?;
    tx.commit().await.context("committing an approval")?;
    Ok(transfer)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_may_be_empty_a_reason_may_not_and_neither_may_pass_500() {
        assert_eq!(check_note("  ").expect("empty note"), "");
        assert!(matches!(
            check_note(&"é".repeat(501)),
            Err(TransferError::InvalidNote)
        ));
        assert_eq!(
            check_note(&"é".repeat(500)).expect("500").chars().count(),
            500
        );
        assert!(matches!(
            check_reason(" \n"),
            Err(TransferError::InvalidReason)
        ));
        assert!(matches!(
            check_reason(&"x".repeat(501)),
            Err(TransferError::InvalidReason)
        ));
        assert_eq!(check_reason(" ok ").expect("reason"), "ok");
    }
}
