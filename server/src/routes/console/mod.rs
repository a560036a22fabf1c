//! The console's plain-HTTP routes, the ones server functions cannot be: a
//! multipart upload from a browser form (answered with a redirect back to
//! the share's page, so it works without JavaScript), the tenant's logo
//! ([`branding`]), the import of codes
//! from a file ([`imports`]), a mail page's list as a file
//! ([`mailing_file`]), a resource's preview,
//! and file downloads: the one-time CSV of a freshly issued batch
//! ([`handover`]) and the exports ([`exports`]).

mod branding;
mod exports;
mod handover;
mod imports;
mod mailing_file;

pub use branding::{MAX_FORM_BYTES as MAX_LOGO_FORM_BYTES, logo_form};
pub use exports::{code_table_csv, learners_csv, records_csv};
pub use handover::codes_csv;
pub use imports::import_form;
pub use mailing_file::{MAX_REQUEST_BYTES as MAX_LIST_FILE_BYTES, mailing_file_form};

use app::i18n::Msg;
use app::{
    auth::{Flash, FlashKind, guard},
    i18n::{Lang, upload_refusal},
};
use axum::{
    extract::{Multipart, Path, State},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use engine::{
    shares::ShareId,
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;
use uuid::Uuid;

use crate::{caller::Caller, problem::ApiError, state::ServerState, uploads::upload};

/// `POST /admin/t/{tenant}/s/{share}/upload`: stores the file, then back to
/// the share's page with a message either way.
pub async fn upload_form(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share)): Path<(Uuid, Uuid)>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Response, ApiError> {
    let lang = Lang::from_headers(&headers);
    let multipart = multipart.map_err(|e| crate::problem::rejection(e, "invalid_multipart"))?;
    let back = format!("/admin/t/{tenant}/s/{share}");
    let caller = Caller::Session(session.clone());
    let flash = match upload(&state, &caller, &share.to_string(), multipart).await {
        Ok(resource) => Flash {
            kind: FlashKind::Success,
            message: lang.format(Msg::Uploaded, &[("title", &resource.title)]),
        },
        Err(error)
            if error.status().is_client_error() && error.status() != StatusCode::FORBIDDEN =>
        {
            Flash {
                kind: FlashKind::Error,
                message: upload_refusal(lang, &error.code, error.field.as_deref(), &error.message),
            }
        }
        Err(error) => return Err(error),
    };
    guard::flash_into(&session, &flash).await?;
    Ok(Redirect::to(&back).into_response())
}

/// `GET /admin/t/{tenant}/s/{share}/r/{resource}/preview`: a resource as
/// learners get it, for the share's admins (no code, no settlement, no
/// record: previews are not accesses).
pub async fn preview(
    State(state): State<ServerState>,
    session: Session,
    Path((tenant, share, resource)): Path<(Uuid, Uuid, Uuid)>,
    request_headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ViewConsole,
    )
    .await?;
    let resource = engine::resources::resource(
        &state.services.pool,
        TenantId(tenant),
        ShareId(share),
        resource,
    )
    .await?
    .ok_or_else(ApiError::not_found)?;
    crate::content::serve(&state.services.storage, &resource, &request_headers).await
}
