//! `POST /admin/t/{tenant}/s/{share}/batches/{batch}/mail/file`: the mail
//! page's list as a file (`app::pages::console::mailings`), a multipart
//! post so it works without JavaScript. The file is read as a pasted list
//! is (one address a line, or a CSV whose cells hold them:
//! `engine::mailings::read_pasted`), then checked or sent exactly as the
//! pasted list is (`engine::mailings::send`); the page it returns to says
//! what came of it, or why nothing was done.

use app::{
    auth::{Flash, FlashKind, guard},
    console::mailings::SendReportView,
    i18n::{Lang, Msg, errors::in_lang, upload_refusal},
};
use axum::{
    extract::{
        Multipart, Path, State,
        multipart::{MultipartError, MultipartRejection},
    },
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use engine::{
    mailings::{self, MailingError, SendRequest},
    shares::ShareId,
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;
use uuid::Uuid;

use crate::{
    problem::{ApiError, rejection},
    state::ServerState,
};

/// The largest request the form may send: a list of
/// [`mailings::MAX_ADDRESSES`] rows of a few hundred bytes each.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The form's fields.
#[derive(Default)]
struct ListForm {
    file: Option<axum::body::Bytes>,
    addressed: bool,
    lang: String,
    intent: String,
}

async fn read_form(mut multipart: Multipart) -> Result<ListForm, MultipartError> {
    let mut form = ListForm::default();
    while let Some(field) = multipart.next_field().await? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            form.file = Some(field.bytes().await?);
            continue;
        }
        let text = field.text().await?;
        match name.as_str() {
            "addressed" => form.addressed = !text.trim().is_empty(),
            "lang" => form.lang = text,
            "intent" => form.intent = text,
            _ => {}
        }
    }
    Ok(form)
}

/// Why a form asks for nothing that can be done.
enum Refusal {
    Said(Msg),
    Mailing(MailingError),
}

/// What the form asks for, or why not.
fn request_of(form: &ListForm) -> Result<(Vec<String>, Option<Lang>, bool), Refusal> {
    let dry_run = match form.intent.as_str() {
        "check" => true,
        "send" => false,
        _ => return Err(Refusal::Said(Msg::MailingCheckOrSend)),
    };
    let lang = match form.lang.trim() {
        "" => None,
        tag => Some(Lang::parse(tag).ok_or(Refusal::Mailing(MailingError::InvalidLang))?),
    };
    let file = match form.file.as_deref() {
        Some(file) if !file.is_empty() => file,
        _ => return Err(Refusal::Said(Msg::MailingFileMissing)),
    };
    let text = std::str::from_utf8(file).map_err(|_| Refusal::Said(Msg::MailingFileNotText))?;
    let lines = mailings::read_pasted(text).map_err(Refusal::Mailing)?;
    Ok((lines, lang, dry_run))
}

/// Back to the mail page's file form, saying why nothing was done.
async fn refuse(session: &Session, back: &str, message: String) -> Result<Response, ApiError> {
    guard::flash_into(
        session,
        &Flash {
            kind: FlashKind::Error,
            message,
        },
    )
    .await?;
    Ok(Redirect::to(&format!("{back}#list-file")).into_response())
}

pub async fn mailing_file_form(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, batch)): Path<(Uuid, Uuid, Uuid)>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let lang = Lang::from_headers(&headers);
    let (admin, _, share) = service::session::member_share(
        &state.services,
        &session,
        TenantId(tenant),
        ShareId(share),
        Permission::ManageCourses,
    )
    .await?;
    let pool = &state.services.pool;
    match engine::batches::summary(pool, share.tenant_id, batch).await? {
        Some(summary) if summary.share == share.id => {}
        _ => return Err(ApiError::not_found()),
    }
    let back = format!("/admin/t/{tenant}/s/{}/batches/{batch}/mail", share.id.0);
    let multipart = multipart.map_err(|e| rejection(e, "invalid_multipart"))?;
    let form = match read_form(multipart).await {
        Ok(form) => form,
        Err(error) => {
            let code = if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
                "too_large"
            } else {
                "invalid_multipart"
            };
            return refuse(
                &session,
                &back,
                upload_refusal(lang, code, None, &error.body_text()),
            )
            .await;
        }
    };
    let (lines, mail_lang, dry_run) = match request_of(&form) {
        Ok(request) => request,
        Err(Refusal::Said(msg)) => return refuse(&session, &back, lang.format(msg, &[])).await,
        Err(Refusal::Mailing(error)) => {
            return refuse(&session, &back, in_lang(&error, lang)).await;
        }
    };
    let sent = mailings::send(
        pool,
        share.tenant_id,
        admin.id,
        &SendRequest {
            batch,
            addresses: &lines,
            addressed: form.addressed,
            lang: mail_lang,
            dry_run,
        },
    )
    .await;
    match sent {
        Ok(report) => {
            let view = SendReportView {
                checked_only: dry_run,
                sent: report.sent,
                to_send: report.to_send,
                duplicates: report.duplicates,
                already_sent: report.already_sent,
                free: report.free,
            };
            guard::flash_into(
                &session,
                &Flash {
                    kind: FlashKind::Success,
                    message: view.said_in(lang).join(" "),
                },
            )
            .await?;
            Ok(Redirect::to(&back).into_response())
        }
        Err(MailingError::Unexpected(error)) => {
            Err(ApiError::from(MailingError::Unexpected(error)))
        }
        Err(refused) => refuse(&session, &back, in_lang(&refused, lang)).await,
    }
}
