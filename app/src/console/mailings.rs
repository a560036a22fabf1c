//! A mailable batch's codes sent by mail
//! (`/admin/t/{tenant}/s/{share}/batches/{batch}/mail`, the page in
//! `pages/console/mailings.rs`): check a pasted list (or a pasted CSV),
//! send it, and follow each recipient (`engine::mailings`, the same
//! send, resend and revoke-and-resend as the JSON API's).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// Recipients one page of the table shows.
pub const RECIPIENTS_PER_PAGE: i64 = 100;

/// A mailable batch, what it has left, and a page of its recipients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailingView {
    pub share_title: String,
    pub batch_label: String,
    /// Codes the batch was issued with.
    pub count: i32,
    /// Codes it has left to mail.
    pub free: i64,
    /// Whether the batch was issued to be mailed (else nothing can be sent).
    pub mailable: bool,
    /// Whether the caller may send, resend and revoke.
    pub may_send: bool,
    pub recipients: Vec<RecipientRow>,
    /// The address to start the next page after, if there is one.
    pub next_after: Option<String>,
}

/// One recipient as the table shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecipientRow {
    pub email: String,
    pub code_id: Uuid,
    pub hint: String,
    /// `queued`, `sent`, `failed`, `redeemed` or `revoked`.
    pub state: String,
    /// The SMTP server's last refusal, while queued again or failed.
    pub error: Option<String>,
    pub mailed: String,
    pub sent: Option<String>,
}

/// What a resend or a revoke-and-resend did, for the page to say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedoneView {
    pub email: String,
    /// A mail was queued now (`false`: the last one still waits to go,
    /// and nothing more was queued).
    pub queued: bool,
}

/// What a check (or a send) of a list found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendReportView {
    /// Whether this was the check: nothing was sent.
    pub checked_only: bool,
    pub sent: usize,
    pub to_send: usize,
    pub duplicates: usize,
    pub already_sent: usize,
    pub free: i64,
}

impl SendReportView {
    /// What the page says of it, in the page's language.
    pub fn said(&self) -> Vec<String> {
        self.said_in(crate::i18n::lang())
    }

    /// What the page says of it in `lang`: the sum first, then what was
    /// skipped.
    pub fn said_in(&self, lang: crate::i18n::Lang) -> Vec<String> {
        use crate::i18n::{Msg, number};
        let n = |v: usize| number(i64::try_from(v).unwrap_or(i64::MAX));
        let mut said = vec![if self.checked_only {
            lang.format(
                Msg::MailingWouldSend,
                &[("count", &n(self.to_send)), ("free", &number(self.free))],
            )
        } else {
            lang.format(Msg::MailingSent, &[("count", &n(self.sent))])
        }];
        if self.already_sent > 0 {
            said.push(lang.format(Msg::MailingAlreadySent, &[("count", &n(self.already_sent))]));
        }
        if self.duplicates > 0 {
            said.push(lang.format(Msg::MailingDuplicates, &[("count", &n(self.duplicates))]));
        }
        said
    }
}

impl RedoneView {
    /// What the page says of a resend (`replaced`: `false`) or a
    /// revoke-and-resend (`true`).
    pub fn said(&self, replaced: bool) -> String {
        use crate::i18n::{Msg, lang};
        let msg = match (replaced, self.queued) {
            (true, _) => Msg::MailingReplaced,
            (false, true) => Msg::MailingResent,
            (false, false) => Msg::MailingStillWaiting,
        };
        lang().format(msg, &[("email", &self.email)])
    }
}

/// Without JavaScript a form's answer is a redirect back to its page: what
/// the answer says goes with it as the page's one-time message.
#[cfg(feature = "ssr")]
async fn say_on_return(message: String) -> Result<(), AppError> {
    use crate::auth::{Flash, FlashKind, guard};
    if guard::from_plain_form() {
        guard::set_flash(&Flash {
            kind: FlashKind::Success,
            message,
        })
        .await?;
    }
    Ok(())
}

/// The batch `batch_id` of the share, for its member allowed `permission`
/// (404 for a batch of another share or tenant).
#[cfg(feature = "ssr")]
async fn member_batch(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
    permission: engine::tenants::Permission,
) -> Result<
    (
        crate::state::Services,
        engine::accounts::Principal,
        engine::shares::Share,
        engine::batches::BatchSummary,
        engine::tenants::Role,
    ),
    AppError,
> {
    let (state, admin, share, role) =
        support::member_share(tenant_id, share_id, permission).await?;
    match engine::batches::summary(&state.pool, share.tenant(), batch_id)
        .await
        .map_err(support::internal)?
    {
        Some(batch) if batch.share == share.id => Ok((state, admin, share, batch, role)),
        _ => Err(AppError::NotFound),
    }
}

/// The batch, its free codes and a page of its recipients (by address,
/// after `after`).
#[server(prefix = "/api/admin", endpoint = "mailings", input = server_fn::codec::GetUrl)]
pub async fn mailing(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
    after: Option<String>,
) -> Result<MailingView, AppError> {
    let (state, _, share, batch, role) = member_batch(
        tenant_id,
        share_id,
        batch_id,
        engine::tenants::Permission::ViewConsole,
    )
    .await?;
    let zone = support::zone(&state, share.tenant()).await?;
    let free = engine::mailings::free_codes(&state.pool, share.tenant(), batch.id)
        .await
        .map_err(support::internal)?;
    let mut rows = engine::mailings::recipients(
        &state.pool,
        share.tenant(),
        batch.id,
        after.as_deref().filter(|a| !a.is_empty()),
        RECIPIENTS_PER_PAGE + 1,
    )
    .await
    .map_err(support::internal)?;
    let more = rows.len() > usize::try_from(RECIPIENTS_PER_PAGE).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(RECIPIENTS_PER_PAGE).unwrap_or(usize::MAX));
    let recipients: Vec<RecipientRow> = rows
        .into_iter()
        .map(|r| RecipientRow {
            email: r.email,
            code_id: r.code_id,
            hint: r.hint,
            state: r.state.as_str().to_owned(),
            error: r.error,
            mailed: zone.when(r.mailed_at),
            sent: r.sent_at.map(|at| zone.when(at)),
        })
        .collect();
    Ok(MailingView {
        share_title: share.title,
        batch_label: batch.label,
        count: batch.count,
        free,
        mailable: batch.mailable,
        may_send: role.allows(engine::tenants::Permission::ManageCourses),
        next_after: more
            .then(|| recipients.last().map(|r| r.email.clone()))
            .flatten(),
        recipients,
    })
}

/// Checks a list (`intent=check`: what would be sent, nothing is) or
/// sends it (`intent=send`). `addresses` is what was pasted: one address
/// a line, or a CSV whose cells hold them (`engine::mailings::read_pasted`).
/// `addressed` (a checkbox) binds each code to its recipient's verified
/// account; `lang` is the mails' language (empty: each recipient's own).
#[server(prefix = "/api/admin", endpoint = "mailings/send")]
pub async fn send_by_mail(
    tenant_id: Uuid,
    share_id: Uuid,
    batch_id: Uuid,
    addresses: String,
    addressed: Option<String>,
    lang: String,
    intent: String,
) -> Result<SendReportView, AppError> {
    let (state, admin, share, batch, _) = member_batch(
        tenant_id,
        share_id,
        batch_id,
        engine::tenants::Permission::ManageCourses,
    )
    .await?;
    let checked_only = match intent.as_str() {
        "check" => true,
        "send" => false,
        _ => {
            return Err(AppError::invalid(
                "intent",
                crate::i18n::t(crate::i18n::Msg::MailingCheckOrSend),
            ));
        }
    };
    let lang = match lang.trim() {
        "" => None,
        tag => Some(
            model::Lang::parse(tag)
                .ok_or_else(|| AppError::outcome(engine::mailings::MailingError::InvalidLang))?,
        ),
    };
    let lines = engine::mailings::read_pasted(&addresses).map_err(AppError::outcome)?;
    let report = engine::mailings::send(
        &state.pool,
        share.tenant(),
        admin.id,
        &engine::mailings::SendRequest {
            batch: batch.id,
            addresses: &lines,
            addressed: addressed.is_some(),
            lang,
            dry_run: checked_only,
        },
    )
    .await
    .map_err(AppError::outcome)?;
    let view = SendReportView {
        checked_only,
        sent: report.sent,
        to_send: report.to_send,
        duplicates: report.duplicates,
        already_sent: report.already_sent,
        free: report.free,
    };
    say_on_return(view.said().join(" ")).await?;
    Ok(view)
}

/// The recipient's code, for a member allowed to send (404 for a code of
/// another tenant).
#[cfg(feature = "ssr")]
async fn member_recipient(
    tenant_id: Uuid,
    code_id: Uuid,
) -> Result<
    (
        crate::state::Services,
        engine::accounts::Principal,
        engine::tenants::TenantId,
    ),
    AppError,
> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageCourses).await?;
    match engine::code_table::share_of_code(&state.pool, &[tenant], code_id)
        .await
        .map_err(support::internal)?
    {
        Some((owner, _)) if owner == tenant => Ok((state, admin, tenant)),
        _ => Err(AppError::NotFound),
    }
}

/// Mails a recipient the same code again (its mail bounced or was lost).
#[server(prefix = "/api/admin", endpoint = "mailings/resend")]
pub async fn resend_mail(tenant_id: Uuid, code_id: Uuid) -> Result<RedoneView, AppError> {
    let (state, admin, tenant) = member_recipient(tenant_id, code_id).await?;
    let done = engine::mailings::resend(&state.pool, tenant, admin.id, code_id)
        .await
        .map_err(AppError::outcome)?;
    let view = RedoneView {
        email: done.recipient.email,
        queued: done.queued,
    };
    say_on_return(view.said(false)).await?;
    Ok(view)
}

/// Revokes a recipient's code and mails them another of the batch. Asks
/// for the explicit "I understand" (`confirm=yes`): the old code stops
/// working at once.
#[server(prefix = "/api/admin", endpoint = "mailings/revoke-and-resend")]
pub async fn revoke_and_resend_mail(
    tenant_id: Uuid,
    code_id: Uuid,
    confirm: Option<String>,
) -> Result<RedoneView, AppError> {
    let (state, admin, tenant) = member_recipient(tenant_id, code_id).await?;
    support::confirmed(
        confirm.as_deref(),
        crate::i18n::Msg::ConfirmTheMailedCodeStopsWorking,
    )?;
    let done = engine::mailings::revoke_and_resend(&state.pool, tenant, admin.id, code_id)
        .await
        .map_err(AppError::outcome)?;
    let view = RedoneView {
        email: done.recipient.email,
        queued: done.queued,
    };
    say_on_return(view.said(true)).await?;
    Ok(view)
}
