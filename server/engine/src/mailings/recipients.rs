//! A batch's recipients (`code_mailings`): where each stands, and what an
//! admin does for one whose mail went astray or whose code should no
//! longer work: send the same code again ([`resend`]), or revoke it and
//! send another ([`revoke_and_resend`]).
//!
//! A recipient is named by the code it was mailed (`code_mailings` holds
//! a code for one address at most). Both take the batch's row as a send
//! does (`FOR NO KEY UPDATE`: a send and these run one after the other),
//! then the recipient's row and its code `FOR UPDATE` (a settlement
//! binding the code waits, or went first and is seen). Neither does its
//! work twice: a resend while the last mail still waits in the outbox
//! queues nothing more, and a revoke-and-resend repeated names a code that
//! is no longer its recipient's ([`MailingError::CodeNotMailed`]).

use anyhow::Context as _;
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{MailingError, RESEND_AFTER_MINUTES, count_free, lock_batch, queue_mails, take_free};
use crate::{accounts::AccountId, audit, code_actions, tenants::TenantId};

/// Where a recipient's code stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecipientState {
    /// The mail waits in the outbox (or is being retried: see `error`).
    Queued,
    /// The SMTP server took the mail.
    Sent,
    /// The mail was given up on (dead-lettered): see `error`.
    Failed,
    /// Someone bound the code.
    Redeemed,
    /// The code was revoked.
    Revoked,
}

impl RecipientState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Sent => "sent",
            Self::Failed => "failed",
            Self::Redeemed => "redeemed",
            Self::Revoked => "revoked",
        }
    }
}

/// One address a batch mailed a code to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub email: String,
    pub code_id: Uuid,
    pub hint: String,
    pub state: RecipientState,
    /// The SMTP server's last refusal, while queued again or failed.
    pub error: Option<String>,
    pub mailed_at: OffsetDateTime,
    pub sent_at: Option<OffsetDateTime>,
}

/// A page of a batch's recipients, by address, after `after` (at most
/// 1,001: a page of 1,000 and whether another follows).
pub async fn recipients(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
    after: Option<&str>,
    limit: i64,
) -> anyhow::Result<Vec<Recipient>> {
    let mut conn = pool.acquire().await.context("taking a connection")?;
    read(&mut conn, tenant, batch, Page::After(after, limit)).await
}

/// One recipient of a batch, by address (`None`: the batch mailed it no
/// code).
pub async fn recipient(
    pool: &PgPool,
    tenant: TenantId,
    batch: Uuid,
    email: &str,
) -> anyhow::Result<Option<Recipient>> {
    let mut conn = pool.acquire().await.context("taking a connection")?;
    Ok(read(&mut conn, tenant, batch, Page::Only(email))
        .await?
        .pop())
}

enum Page<'a> {
    After(Option<&'a str>, i64),
    Only(&'a str),
}

async fn read(
    conn: &mut PgConnection,
    tenant: TenantId,
    batch: Uuid,
    page: Page<'_>,
) -> anyhow::Result<Vec<Recipient>> {
    let (after, only, limit) = match page {
        Page::After(after, limit) => (after, None, limit.clamp(1, 1001)),
        Page::Only(email) => (None, Some(email), 1),
    };
    let rows = sqlx::query!(
        r#"SELECT m.email, m.code_id, c.hint, m.created_at,
                  c.revoked_at IS NOT NULL AS "revoked!", c.bound_principal IS NOT NULL AS "redeemed!",
                  o.sent_at AS "sent_at?", o.dead_at AS "dead_at?", o.last_error AS "last_error?"
           FROM code_mailings m
           JOIN auth_codes c ON c.tenant_id = m.tenant_id AND c.id = m.code_id
           LEFT JOIN mail_outbox o ON o.id = m.mail_id
           WHERE m.tenant_id = $1 AND m.batch_id = $2 AND ($3::text IS NULL OR m.email > $3)
             AND ($4::text IS NULL OR m.email = $4)
           ORDER BY m.email
           LIMIT $5"#,
        tenant.0,
        batch,
        after,
        only,
        limit,
    )
    .fetch_all(conn)
    .await
    .context("listing a batch's recipients")?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let state = if r.revoked {
                RecipientState::Revoked
            } else if r.redeemed {
                RecipientState::Redeemed
            } else if r.sent_at.is_some() {
                RecipientState::Sent
            } else if r.dead_at.is_some() {
                RecipientState::Failed
            } else {
                RecipientState::Queued
            };
            Recipient {
                email: r.email,
                code_id: r.code_id,
                hint: r.hint,
                state,
                error: r.last_error.filter(|_| r.sent_at.is_none()),
                mailed_at: r.created_at,
                sent_at: r.sent_at,
            }
        })
        .collect())
}

/// What a resend or a revoke-and-resend did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redone {
    /// The recipient as it now stands.
    pub recipient: Recipient,
    /// Whether a mail was queued now (`false`: the last one still waited
    /// to go).
    pub queued: bool,
    /// The code revoked now (a revoke-and-resend of a code still live).
    pub revoked: Option<Uuid>,
}

/// A recipient's row and its code, locked.
struct Held {
    batch: Uuid,
    share: Uuid,
    email: String,
    redeemed: bool,
    revoked: bool,
    expired: bool,
    addressed: bool,
    /// The last mail waits in the outbox still.
    waiting: bool,
    /// The last mail was queued less than [`RESEND_AFTER_MINUTES`] ago
    /// and not given up on.
    recent: bool,
    lang: Option<String>,
}

/// Takes the batch of the recipient `code` was mailed to, then the
/// recipient's row and the code.
async fn hold(tx: &mut PgConnection, tenant: TenantId, code: Uuid) -> Result<Held, MailingError> {
    // A recipient's batch never changes: read it first, to lock the batch
    // before the rows under it (as a send does).
    let batch = sqlx::query_scalar!(
        "SELECT batch_id FROM code_mailings WHERE tenant_id = $1 AND code_id = $2",
        tenant.0,
        code,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("finding a mailed code's batch")?
    .ok_or(MailingError::CodeNotMailed)?;
    let share = lock_batch(tx, tenant, batch).await?;
    let row = sqlx::query!(
        r#"SELECT m.email, c.bound_principal IS NOT NULL AS "redeemed!",
                  c.revoked_at IS NOT NULL AS "revoked!",
                  NOT coalesce(code_expires_at(c.tenant_id, c.batch_id, c.expires_at) > now(), true)
                      AS "expired!",
                  c.addressed_to IS NOT NULL AS "addressed!",
                  (o.id IS NOT NULL AND o.sent_at IS NULL AND o.dead_at IS NULL) AS "waiting!",
                  coalesce(o.dead_at IS NULL AND o.created_at > now() - make_interval(mins => $3), false)
                      AS "recent!",
                  o.lang AS "lang?"
           FROM code_mailings m
           JOIN auth_codes c ON c.tenant_id = m.tenant_id AND c.id = m.code_id
           LEFT JOIN mail_outbox o ON o.id = m.mail_id
           WHERE m.tenant_id = $1 AND m.code_id = $2
           FOR UPDATE OF m, c"#,
        tenant.0,
        code,
        RESEND_AFTER_MINUTES,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("taking a recipient")?
    // Replaced while the batch was waited for.
    .ok_or(MailingError::CodeNotMailed)?;
    Ok(Held {
        batch,
        share,
        email: row.email,
        redeemed: row.redeemed,
        revoked: row.revoked,
        expired: row.expired,
        addressed: row.addressed,
        waiting: row.waiting,
        recent: row.recent,
        lang: row.lang,
    })
}

/// The recipient after a change, as the change's own transaction reads
/// it (the answer is what was done, even if a later change follows).
async fn reread(
    tx: &mut PgConnection,
    tenant: TenantId,
    held: &Held,
) -> Result<Recipient, MailingError> {
    Ok(read(tx, tenant, held.batch, Page::Only(&held.email))
        .await?
        .pop()
        .ok_or_else(|| anyhow::anyhow!("a recipient went away as it was changed"))?)
}

/// Mails `held`'s recipient `to` (the code they held, `from`, or the one
/// that replaces it) and notes it as theirs, with the mail.
async fn mail_again(
    tx: &mut PgConnection,
    tenant: TenantId,
    held: &Held,
    from: Uuid,
    to: Uuid,
) -> Result<(), MailingError> {
    let mail = Uuid::now_v7();
    queue_mails(
        tx,
        tenant,
        held.share,
        held.lang.as_deref(),
        held.addressed,
        (&[mail], std::slice::from_ref(&held.email), &[to]),
    )
    .await?;
    sqlx::query!(
        "UPDATE code_mailings SET code_id = $3, mail_id = $4 WHERE tenant_id = $1 AND code_id = $2",
        tenant.0,
        from,
        to,
        mail,
    )
    .execute(&mut *tx)
    .await
    .context("noting a recipient's new mail")?;
    Ok(())
}

/// Mails the recipient of `code` that code again (its mail bounced, or
/// was lost), in the language of the first mail. Refused for a code bound,
/// revoked or past its date (send another with [`revoke_and_resend`]).
/// While the last mail still waits in the outbox, nothing more is queued;
/// within [`RESEND_AFTER_MINUTES`] of it, the resend is refused (unless
/// that mail was given up on).
pub async fn resend(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<Redone, MailingError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let held = hold(&mut tx, tenant, code).await?;
    if held.redeemed {
        return Err(MailingError::CodeRedeemed);
    }
    if held.revoked {
        return Err(MailingError::CodeRevoked);
    }
    if held.expired {
        return Err(MailingError::CodeExpired);
    }
    if !held.waiting && held.recent {
        return Err(MailingError::ResendTooSoon);
    }
    let queued = !held.waiting;
    if queued {
        mail_again(&mut tx, tenant, &held, code, code).await?;
        audit::admin_action(
            &mut tx,
            tenant,
            actor,
            "batch.recipient_resent",
            ("code_batch", held.batch),
            json!({ "email": held.email, "code_id": code }),
        )
        .await?;
    }
    let recipient = reread(&mut tx, tenant, &held).await?;
    tx.commit().await.context("committing a resend")?;
    Ok(Redone {
        recipient,
        queued,
        revoked: None,
    })
}

/// Revokes `code`, mailed to a recipient, and mails them another free
/// code of the batch, addressed to them if the first was: for a code whose
/// text went astray (a mail forwarded, an address mistyped) or that is
/// past its date. Refused for a code bound to a learner (that is the
/// code's own revoke-and-replace) and when the batch has no code left.
/// A code revoked already (from the code table) is replaced all the same.
pub async fn revoke_and_resend(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    code: Uuid,
) -> Result<Redone, MailingError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let held = hold(&mut tx, tenant, code).await?;
    if held.redeemed {
        return Err(MailingError::CodeRedeemed);
    }
    let Some(fresh) = take_free(&mut tx, tenant, held.batch, 1).await?.pop() else {
        // None free, or the free ones are being changed (a bind, an
        // expiry, a replacement in flight): then try again.
        return Err(if count_free(&mut tx, tenant, held.batch).await? > 0 {
            MailingError::BatchChanged
        } else {
            MailingError::NoCodeLeft
        });
    };
    let revoked = if held.revoked {
        None
    } else {
        let found = code_actions::revoke_in(&mut tx, tenant, actor, code).await?;
        debug_assert!(found, "the code was locked a moment ago");
        Some(code)
    };
    if held.addressed {
        sqlx::query!(
            "UPDATE auth_codes SET addressed_to = $3 WHERE tenant_id = $1 AND id = $2",
            tenant.0,
            fresh,
            held.email,
        )
        .execute(&mut *tx)
        .await
        .context("addressing the new code")?;
    }
    mail_again(&mut tx, tenant, &held, code, fresh).await?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "batch.recipient_code_replaced",
        ("code_batch", held.batch),
        json!({ "email": held.email, "replaced": code, "revoked_now": revoked.is_some(),
                "code_id": fresh }),
    )
    .await?;
    let recipient = reread(&mut tx, tenant, &held).await?;
    tx.commit()
        .await
        .context("committing a revoke-and-resend")?;
    Ok(Redone {
        recipient,
        queued: true,
        revoked,
    })
}
