//! `POST /admin/t/{tenant}/s/{share}/import`: the console's import form
//! (`app::pages::console::imports`), a multipart post so it works without
//! JavaScript. Imports the file's codes (`engine::imports`) and opens the
//! import's report; a refusal goes back to the share's page with its
//! message, in the page's language, and changes nothing.

use app::{
    auth::{Flash, FlashKind, guard},
    i18n::{Lang, errors::in_lang, upload_refusal},
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
    imports::{self, Alphabet, ImportError, ImportFormat, ImportRequest},
    outcome::Outcome as _,
    progress::Progress,
    shares::ShareId,
    tenants::{Permission, TenantId},
};
use service::ServiceError;
use tower_sessions::Session;
use uuid::Uuid;

use crate::{
    problem::{ApiError, rejection},
    state::ServerState,
};

/// The form's fields.
#[derive(Default)]
struct ImportForm {
    label: String,
    format: String,
    alphabet: String,
    ticket: Option<Uuid>,
    /// The form's "the first line names the columns" tick.
    header: bool,
    file: Option<axum::body::Bytes>,
}

/// Why a form could not be read: the upload's refusal code (`too_large`
/// past [`imports::MAX_REQUEST_BYTES`], else `invalid_multipart`).
fn unreadable(error: &MultipartError) -> &'static str {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        "too_large"
    } else {
        "invalid_multipart"
    }
}

async fn read_form(mut multipart: Multipart) -> Result<ImportForm, MultipartError> {
    let mut form = ImportForm::default();
    while let Some(field) = multipart.next_field().await? {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            form.file = Some(field.bytes().await?);
            continue;
        }
        let text = field.text().await?;
        match name.as_str() {
            "label" => form.label = text,
            "format" => form.format = text,
            "alphabet" => form.alphabet = text,
            "ticket" => form.ticket = text.trim().parse().ok(),
            "header" => form.header = !text.trim().is_empty(),
            _ => {}
        }
    }
    Ok(form)
}

/// What the form asks for, or why not.
fn request_of(form: &ImportForm) -> Result<(ImportFormat, Vec<(u32, String)>), ImportError> {
    let format = match form.format.trim() {
        "ours" => ImportFormat::Ours,
        "" | "foreign" => ImportFormat::Foreign(if form.alphabet.trim().is_empty() {
            Alphabet::letters_and_digits()
        } else {
            Alphabet::parse(&form.alphabet)?
        }),
        _ => return Err(ImportError::InvalidImportFormat),
    };
    let file = form.file.as_deref().unwrap_or_default();
    Ok((format, imports::lines_of_file(file, form.header)))
}

pub async fn import_form(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
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
    let back = format!("/admin/t/{tenant}/s/{}", share.id.0);
    let multipart = multipart.map_err(|e| rejection(e, "invalid_multipart"))?;
    let form = match read_form(multipart).await {
        Ok(form) => form,
        Err(error) => {
            let code = unreadable(&error);
            let flash = Flash {
                kind: FlashKind::Error,
                message: upload_refusal(lang, code, None, &error.body_text()),
            };
            guard::flash_into(&session, &flash).await?;
            return Ok(Redirect::to(&format!("{back}#import")).into_response());
        }
    };
    let progress = form
        .ticket
        .map(|t| Progress::new(&state.services.redis, admin.id, t));
    let imported = match request_of(&form) {
        Err(error) => Err(ServiceError::from(error)),
        Ok((format, lines)) => {
            service::issuing::import_codes(
                &state.services,
                &admin,
                &share,
                ImportRequest {
                    share: share.id,
                    label: &form.label,
                    format,
                    expires_at: None,
                    lines,
                    progress: progress.as_ref(),
                },
            )
            .await
        }
    };
    match imported {
        Ok(imported) => {
            Ok(Redirect::to(&format!("{back}/imports/{}", imported.batch_id)).into_response())
        }
        // An expected refusal (bad input, nothing importable, the
        // throttle) goes back with its message; a failure is the error page.
        Err(refused) if refused.unexpected().is_none() => {
            let flash = Flash {
                kind: FlashKind::Error,
                message: in_lang(&refused, lang),
            };
            guard::flash_into(&session, &flash).await?;
            Ok(Redirect::to(&format!("{back}#import")).into_response())
        }
        Err(failed) => Err(ApiError::from(failed)),
    }
}
