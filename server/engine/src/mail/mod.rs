//! The mail outbox: every mail AdmitOne sends is a `mail_outbox` row
//! written in the same transaction as what it reports (a registration, a
//! reset, a binding, an invitation), so none is lost and none reports
//! something that rolled back.
//!
//! The mail relay (`server/src/mail/`) delivers rows the way the webhook
//! relay delivers events, with the same lease and retry rules
//! ([`crate::delivery`]): [`claim_due`] leases due rows (their attempt
//! counted, their due time pushed past the lease) and commits before
//! anything is sent; [`record`] settles an attempt, and
//! [`record_delivered`] a round's deliveries at once, each only while its
//! lease is still the caller's. A relay that dies between the SMTP
//! server's `250` and the record leaves the lease to run out and the mail
//! goes again: at least once, and at most once per lease.
//!
//! A row holds what the mail says (its [`Template`], the recipient, the
//! language asked for and a few parameters), not its text: the relay
//! writes the text out at delivery, and derives the single-use link a
//! mail carries from `link_id` ([`crate::accounts::links`]), so no row
//! holds a usable link.

use std::time::Duration;

use anyhow::Context as _;
use model::{AccountId, Lang, TenantId};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::delivery::{Attempted, Recorded, RetryPolicy};

pub mod limits;

pub use limits::MailLimits;

/// What a mail says. The words are `mail_outbox.template`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Template {
    /// "Confirm your address" (registration, or "send again").
    VerifyEmail,
    /// "Reset your password" (a 30-minute link).
    ResetPassword,
    /// "Your password was changed" (a reset or a change).
    PasswordChanged,
    /// To a new address: "confirm it is yours".
    ChangeEmail,
    /// To the current address: "someone asked to move your account to …".
    EmailChangeRequested,
    /// To the old address: "your address was changed to …".
    EmailChanged,
    /// "You are invited to a tenant's team".
    Invitation,
    /// The receipt of a binding: "you now hold <course>".
    CodeBound,
    /// An admin unbound the learner's code (with the reason).
    CodeUnbound,
    /// An admin revoked the learner's (bound) code.
    CodeRevoked,
    /// To the tenant's owners: others keep trying a bound code.
    LeakSuspected,
    /// An admin revoked the learner's leaked code and bound a new one to
    /// them (with the reason).
    CodeReplaced,
    /// To the address a learner named: "confirm the course moves to this
    /// account" (a 7-day link).
    TransferConfirm,
    /// To the learner whose code moved: "your course is now on …".
    CodeTransferredAway,
    /// To the account it moved to: "the course is now yours".
    CodeTransferredHere,
    /// To both accounts: an admin refused the move (with the reason).
    TransferRefused,
    /// To an address someone registered: "finish your account" (a
    /// 24-hour link).
    SignUp,
    /// To an address someone registered that has an account: "you have
    /// an account already" (sign in, or reset the password).
    AccountExists,
    /// To a buyer: the codes of their order (derived again at delivery
    /// from the ids in its parameters: `crate::orders::mailed_codes`).
    CodesSent,
}

impl Template {
    pub const ALL: [Template; 19] = [
        Self::VerifyEmail,
        Self::ResetPassword,
        Self::PasswordChanged,
        Self::ChangeEmail,
        Self::EmailChangeRequested,
        Self::EmailChanged,
        Self::Invitation,
        Self::CodeBound,
        Self::CodeUnbound,
        Self::CodeRevoked,
        Self::LeakSuspected,
        Self::CodeReplaced,
        Self::TransferConfirm,
        Self::CodeTransferredAway,
        Self::CodeTransferredHere,
        Self::TransferRefused,
        Self::SignUp,
        Self::AccountExists,
        Self::CodesSent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifyEmail => "verify_email",
            Self::ResetPassword => "reset_password",
            Self::PasswordChanged => "password_changed",
            Self::ChangeEmail => "change_email",
            Self::EmailChangeRequested => "email_change_requested",
            Self::EmailChanged => "email_changed",
            Self::Invitation => "invitation",
            Self::CodeBound => "code_bound",
            Self::CodeUnbound => "code_unbound",
            Self::CodeRevoked => "code_revoked",
            Self::LeakSuspected => "leak_suspected",
            Self::CodeReplaced => "code_replaced",
            Self::TransferConfirm => "transfer_confirm",
            Self::CodeTransferredAway => "code_transferred_away",
            Self::CodeTransferredHere => "code_transferred_here",
            Self::TransferRefused => "transfer_refused",
            Self::SignUp => "sign_up",
            Self::AccountExists => "account_exists",
            Self::CodesSent => "codes_sent",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == word)
    }
}

/// A mail to queue.
#[derive(Debug, Clone)]
pub struct NewMail<'a> {
    pub tenant: Option<TenantId>,
    pub account: Option<AccountId>,
    pub template: Template,
    pub to: &'a str,
    pub lang: Lang,
    /// What the template needs besides the link (a name, a course title).
    pub params: Value,
    /// The single-use link the mail carries, if any.
    pub link: Option<Uuid>,
}

/// Queues `mail` inside the caller's transaction. Returns its id.
pub async fn enqueue(conn: &mut PgConnection, mail: NewMail<'_>) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO mail_outbox (id, tenant_id, account_id, template, to_address, lang, params, link_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        id,
        mail.tenant.map(|t| t.0),
        mail.account.map(|a| a.0),
        mail.template.as_str(),
        mail.to,
        mail.lang.tag(),
        mail.params,
        mail.link,
    )
    .execute(conn)
    .await
    .with_context(|| format!("queueing the mail {}", mail.template.as_str()))?;
    Ok(id)
}

/// Queues a notice about a learner's code of `share` (bound, unbound,
/// revoked) to the learner, in the language of their last sign-in, in one
/// statement: the course and the tenant are named in `params` (`course`,
/// `course_slug`, `tenant`) beside `extra`.
pub async fn enqueue_code_notice(
    conn: &mut PgConnection,
    template: Template,
    tenant: TenantId,
    share: Uuid,
    learner: AccountId,
    extra: Value,
) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO mail_outbox (id, tenant_id, account_id, template, to_address, lang, params)
         SELECT $1, $2, a.id, $5, a.email, a.lang,
                jsonb_build_object('course', s.title, 'course_slug', s.slug, 'tenant', t.name) || $6
         FROM accounts a
         JOIN shares s ON s.tenant_id = $2 AND s.id = $4
         JOIN tenants t ON t.id = $2
         WHERE a.id = $3",
        Uuid::now_v7(),
        tenant.0,
        learner.0,
        share,
        template.as_str(),
        extra,
    )
    .execute(conn)
    .await
    .with_context(|| format!("queueing the notice {}", template.as_str()))?;
    Ok(())
}

/// A mail leased to one relay: what to write out, and the attempt number
/// that proves the lease is still this relay's.
#[derive(Debug, Clone)]
pub struct DueMail {
    pub id: Uuid,
    /// The tenant the mail is about (its branding is written into it),
    /// `None` for an account's own mail.
    pub tenant: Option<TenantId>,
    pub attempt: i32,
    pub template: Template,
    pub to: String,
    pub lang: Lang,
    pub params: Value,
    pub link: Option<Uuid>,
    pub created_at: OffsetDateTime,
}

/// Leases up to `limit` due mails for `lease`, round-robin across tenants
/// (an account's own mail, which no tenant sends, is one more queue):
/// every tenant's oldest due mail first, then every one's next, so a
/// tenant mailing thousands delays only its own mail. Within `limits`
/// ([`limits`]): a tenant that had its minute's share of attempts gets
/// none leased until the next minute, and no more are leased in a second
/// than the server's share; what is leased is counted in the same
/// statement.
pub async fn claim_due(
    executor: impl sqlx::PgExecutor<'_>,
    limit: i64,
    lease: Duration,
    limits: MailLimits,
) -> anyhow::Result<Vec<DueMail>> {
    let (tenant_per_minute, server_per_second) = limits.as_sql();
    let rows = sqlx::query!(
        r#"WITH ranked AS (
               SELECT id, tenant_id, next_attempt_at,
                      row_number() OVER (PARTITION BY tenant_id ORDER BY next_attempt_at, id) AS turn
                 FROM mail_outbox
                WHERE sent_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
           ), spent AS (
               -- Each tenant's attempts this minute.
               SELECT tenant_id, attempts FROM mail_windows
                WHERE kind = 'tenant' AND window_start = date_trunc('minute', now())
           ), room AS (
               -- What the server may still hand out this second.
               SELECT CASE WHEN $3::int IS NULL THEN $1::bigint
                           ELSE greatest(0, least($1::bigint, $3 - coalesce(
                                (SELECT attempts FROM mail_windows
                                  WHERE kind = 'server'
                                    AND tenant_id = '00000000-0000-0000-0000-000000000000'
                                    AND window_start = date_trunc('second', now())), 0)))
                      END AS n
           ), due AS (
               SELECT m.id FROM mail_outbox m
                 JOIN (SELECT r.id, r.turn, r.next_attempt_at, r.tenant_id IS NOT NULL AS tenants,
                              coalesce(s.attempts, 0) AS served
                         FROM ranked r
                         LEFT JOIN spent s ON s.tenant_id = r.tenant_id
                        WHERE r.turn <= $1::bigint
                          -- A tenant's turns past its minute's share wait.
                          AND (r.tenant_id IS NULL OR $4::int IS NULL
                               OR r.turn <= $4 - coalesce(s.attempts, 0))
                        -- Within a turn: account mail (resets, verifications)
                        -- first, then the tenants served least this minute,
                        -- so a second's room too small for every queue is
                        -- not always the oldest backlogs'.
                        ORDER BY r.turn, tenants, served, r.next_attempt_at
                        LIMIT $1 * 4) r ON r.id = m.id
                -- Checked again on the row as locked: a lease another relay
                -- committed after this statement began pushed it past now().
                WHERE m.sent_at IS NULL AND m.dead_at IS NULL AND m.next_attempt_at <= now()
                ORDER BY r.turn, r.tenants, r.served, r.next_attempt_at
                LIMIT (SELECT n FROM room)
                FOR UPDATE OF m SKIP LOCKED
           ), leased AS (
               UPDATE mail_outbox m
               SET attempts = m.attempts + 1,
                   next_attempt_at = now() + make_interval(secs => $2)
               FROM due
               WHERE m.id = due.id
               RETURNING m.id, m.tenant_id, m.attempts, m.template, m.to_address, m.lang, m.params,
                         m.link_id, m.created_at
           ), tenants_counted AS (
               INSERT INTO mail_windows (kind, tenant_id, window_start, attempts)
               SELECT 'tenant', tenant_id, date_trunc('minute', now()), count(*)
                 FROM leased WHERE tenant_id IS NOT NULL AND $4::int IS NOT NULL
                GROUP BY tenant_id
                -- One order for every relay's upserts: two claims never
                -- wait on each other's windows crosswise.
                ORDER BY tenant_id
               ON CONFLICT (tenant_id, kind, window_start)
               DO UPDATE SET attempts = mail_windows.attempts + EXCLUDED.attempts
           ), server_counted AS (
               INSERT INTO mail_windows (kind, tenant_id, window_start, attempts)
               SELECT 'server', '00000000-0000-0000-0000-000000000000', date_trunc('second', now()), count(*)
                 FROM leased WHERE $3::int IS NOT NULL
               HAVING count(*) > 0
               ON CONFLICT (tenant_id, kind, window_start)
               DO UPDATE SET attempts = mail_windows.attempts + EXCLUDED.attempts
           )
           SELECT id AS "id!", tenant_id, attempts AS "attempts!", template AS "template!",
                  to_address AS "to_address!", lang AS "lang!", params AS "params!", link_id,
                  created_at AS "created_at!"
             FROM leased"#,
        limit,
        lease.as_secs_f64(),
        server_per_second,
        tenant_per_minute,
    )
    .fetch_all(executor)
    .await
    .context("leasing due mails")?;
    let mut due = Vec::with_capacity(rows.len());
    for r in rows {
        due.push(DueMail {
            id: r.id,
            tenant: r.tenant_id.map(TenantId),
            attempt: r.attempts,
            template: Template::parse(&r.template).with_context(|| {
                format!("mail {} has the unknown template {:?}", r.id, r.template)
            })?,
            to: r.to_address,
            lang: Lang::parse(&r.lang).unwrap_or_default(),
            params: r.params,
            link: r.link_id,
            created_at: r.created_at,
        });
    }
    Ok(due)
}

/// Settles one attempt of a leased mail.
pub async fn record(
    pool: &PgPool,
    due: &DueMail,
    outcome: &Attempted,
    policy: &RetryPolicy,
) -> anyhow::Result<Recorded> {
    let (recorded, changed) = match outcome {
        Attempted::Delivered { .. } => {
            let changed = sqlx::query!(
                "UPDATE mail_outbox SET sent_at = now(), last_error = NULL
                 WHERE id = $1 AND attempts = $2 AND sent_at IS NULL AND dead_at IS NULL",
                due.id,
                due.attempt,
            )
            .execute(pool)
            .await
            .context("recording a sent mail")?;
            (Recorded::Delivered, changed.rows_affected())
        }
        Attempted::Failed { status, error } | Attempted::Permanent { status, error } => {
            let permanent = matches!(outcome, Attempted::Permanent { .. });
            let (dead, retry_in) = policy.after_failure(due.attempt, permanent);
            let error: String = match status {
                Some(code) => format!("{code}: {error}"),
                None => error.clone(),
            }
            .chars()
            .take(500)
            .collect();
            let changed = sqlx::query!(
                "UPDATE mail_outbox
                 SET last_error = $3,
                     dead_at = CASE WHEN $4 THEN now() END,
                     next_attempt_at = now() + make_interval(secs => $5)
                 WHERE id = $1 AND attempts = $2 AND sent_at IS NULL AND dead_at IS NULL",
                due.id,
                due.attempt,
                error,
                dead,
                retry_in.as_secs_f64(),
            )
            .execute(pool)
            .await
            .context("recording a failed mail")?;
            (
                if dead {
                    Recorded::Dead
                } else {
                    Recorded::WillRetry
                },
                changed.rows_affected(),
            )
        }
    };
    Ok(if changed == 0 {
        Recorded::LeaseLost
    } else {
        recorded
    })
}

/// Settles the delivered attempts of a round in one statement (one commit
/// for the round, not one per mail: a course launch's receipts would
/// otherwise double the commits its first accesses make). Like
/// [`record`], each only while its lease is still the caller's. Returns
/// the ids recorded; a mail missing from them had lost its lease.
pub async fn record_delivered(pool: &PgPool, sent: &[&DueMail]) -> anyhow::Result<Vec<Uuid>> {
    if sent.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<Uuid> = sent.iter().map(|due| due.id).collect();
    let attempts: Vec<i32> = sent.iter().map(|due| due.attempt).collect();
    sqlx::query_scalar!(
        "UPDATE mail_outbox m SET sent_at = now(), last_error = NULL
         FROM unnest($1::uuid[], $2::int4[]) AS d(id, attempt)
         WHERE m.id = d.id AND m.attempts = d.attempt AND m.sent_at IS NULL AND m.dead_at IS NULL
         RETURNING m.id",
        &ids,
        &attempts,
    )
    .fetch_all(pool)
    .await
    .context("recording sent mails")
}

/// Gives the dead-lettered mails of the last `days` days one more attempt
/// each (`server admin requeue-mail`, once the SMTP server, its
/// credentials or `mail.from` are fixed), except those whose link is used
/// or expired (nobody needs it any more). A link lives in the table of
/// what it does: an account's, a registration's, a transfer's, an
/// invitation's. The attempt count goes on
/// (leases are told apart by it), so a requeued mail that fails again is
/// dead again at once. Returns how many.
pub async fn requeue_dead(pool: &PgPool, days: u32) -> anyhow::Result<u64> {
    let requeued = sqlx::query!(
        "UPDATE mail_outbox m SET dead_at = NULL, next_attempt_at = now()
         WHERE m.dead_at IS NOT NULL AND m.sent_at IS NULL
           AND m.created_at > now() - make_interval(days => $1)
           AND (m.link_id IS NULL
                OR EXISTS (SELECT 1 FROM account_links l
                           WHERE l.id = m.link_id AND l.used_at IS NULL AND l.expires_at > now())
                OR EXISTS (SELECT 1 FROM signup_links s
                           WHERE s.id = m.link_id AND s.used_at IS NULL AND s.expires_at > now())
                OR EXISTS (SELECT 1 FROM transfer_requests t
                           WHERE t.tenant_id = m.tenant_id AND t.id = m.link_id
                             AND t.status = 'awaiting_target' AND t.link_expires_at > now())
                OR EXISTS (SELECT 1 FROM tenant_invitations i
                           WHERE i.tenant_id = m.tenant_id AND i.id = m.link_id AND i.accepted_at IS NULL
                             AND i.revoked_at IS NULL AND i.expires_at > now()))",
        i32::try_from(days).unwrap_or(i32::MAX),
    )
    .execute(pool)
    .await
    .context("requeueing dead mail")?;
    Ok(requeued.rows_affected())
}

/// Mails not yet sent, and dead-lettered ones: what an operator alerts on.
pub async fn backlog(pool: &PgPool) -> anyhow::Result<(i64, i64)> {
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND dead_at IS NULL) AS "pending!",
                  (SELECT count(*) FROM mail_outbox WHERE dead_at IS NOT NULL) AS "dead!""#
    )
    .fetch_one(pool)
    .await
    .context("counting the mail backlog")?;
    Ok((row.pending, row.dead))
}

/// Development only: a mail as the dev mailbox keeps it (written out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevMail {
    pub id: Uuid,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub delivered_at: OffsetDateTime,
}

/// Development only: keeps a written-out mail in the dev mailbox (what
/// "delivery" is when no SMTP server is configured).
pub async fn deliver_to_dev_mailbox(
    pool: &PgPool,
    mail: Uuid,
    to: &str,
    subject: &str,
    text: &str,
    html: &str,
) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO dev_mailbox (id, mail_id, to_address, subject, text_body, html_body)
         VALUES ($1, $2, $3, $4, $5, $6)",
        Uuid::now_v7(),
        mail,
        to,
        subject,
        text,
        html,
    )
    .execute(pool)
    .await
    .context("delivering to the dev mailbox")?;
    Ok(())
}

/// Development only: the dev mailbox's latest mails, newest first.
pub async fn dev_mailbox(pool: &PgPool, limit: i64) -> anyhow::Result<Vec<DevMail>> {
    sqlx::query_as!(
        DevMail,
        r#"SELECT id, to_address AS "to", subject, text_body AS "text", delivered_at FROM dev_mailbox
           ORDER BY delivered_at DESC, id DESC LIMIT $1"#,
        limit,
    )
    .fetch_all(pool)
    .await
    .context("reading the dev mailbox")
}

/// Development only: one dev mailbox mail's HTML part.
pub async fn dev_mail_html(pool: &PgPool, id: Uuid) -> anyhow::Result<Option<String>> {
    sqlx::query_scalar!("SELECT html_body FROM dev_mailbox WHERE id = $1", id)
        .fetch_optional(pool)
        .await
        .context("reading a dev mailbox mail")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round's one statement records each delivered mail only while
    /// its lease is the round's: not one whose lease passed on (its
    /// attempt moved), not one settled already; and never twice.
    #[sqlx::test(migrations = "../../migrations")]
    async fn a_round_records_only_the_mails_whose_lease_it_still_holds(pool: PgPool) {
        let mut conn = pool.acquire().await.expect("a connection");
        for to in [
            "a@example.com",
            "b@example.com",
            "c@example.com",
            "d@example.com",
        ] {
            let mail = NewMail {
                tenant: None,
                account: None,
                template: Template::PasswordChanged,
                to,
                lang: Lang::default(),
                params: serde_json::json!({}),
                link: None,
            };
            enqueue(&mut conn, mail).await.expect("queued");
        }
        drop(conn);
        let leased = claim_due(&pool, 10, Duration::from_secs(60), MailLimits::none())
            .await
            .expect("leased");
        assert_eq!(leased.len(), 4);
        // c's lease ran out and another relay took it; d was dead-lettered.
        sqlx::query("UPDATE mail_outbox SET attempts = attempts + 1 WHERE id = $1")
            .bind(leased[2].id)
            .execute(&pool)
            .await
            .expect("c leased again");
        sqlx::query("UPDATE mail_outbox SET dead_at = now() WHERE id = $1")
            .bind(leased[3].id)
            .execute(&pool)
            .await
            .expect("d dead");
        let round: Vec<&DueMail> = leased.iter().collect();
        let mut recorded = record_delivered(&pool, &round).await.expect("recorded");
        recorded.sort();
        let mut expected = vec![leased[0].id, leased[1].id];
        expected.sort();
        assert_eq!(recorded, expected);
        let sent: Vec<Uuid> =
            sqlx::query_scalar("SELECT id FROM mail_outbox WHERE sent_at IS NOT NULL ORDER BY id")
                .fetch_all(&pool)
                .await
                .expect("sent");
        assert_eq!(sent, expected);
        assert!(
            record_delivered(&pool, &round)
                .await
                .expect("again")
                .is_empty(),
            "recorded once"
        );
        assert!(record_delivered(&pool, &[]).await.expect("none").is_empty());
    }

    #[test]
    fn every_template_is_its_word() {
        for template in Template::ALL {
            assert_eq!(Template::parse(template.as_str()), Some(template));
        }
        assert_eq!(Template::parse("spam"), None);
    }
}
