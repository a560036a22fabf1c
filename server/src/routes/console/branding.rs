//! `POST /admin/t/{tenant}/logo`: the team page's logo form
//! (`app::pages::console::team`), a multipart post so it works without
//! JavaScript. Stores the tenant's new logo (`engine::branding`), or says
//! why not, and goes back to the team page either way; a refused file
//! changes nothing.

use app::{
    auth::{Flash, FlashKind, guard},
    i18n::{Lang, Msg, errors::in_lang},
};
use axum::{
    extract::{Multipart, Path, State, multipart::MultipartRejection},
    http::StatusCode,
    response::{IntoResponse, Redirect, Response},
};
use engine::{
    branding::BrandingError,
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;
use uuid::Uuid;

use crate::{problem::ApiError, state::ServerState};

/// The most a logo form may send: the logo's limit and room for the
/// multipart framing. Past it the body is cut off and the logo refused as
/// too large.
pub const MAX_FORM_BYTES: usize = engine::branding::MAX_LOGO_BYTES + 16 * 1024;

/// The form's `logo` file, or why it cannot be one.
async fn logo_of(
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Vec<u8>, BrandingError> {
    let mut multipart = multipart.map_err(|_| BrandingError::LogoNotAnImage)?;
    let too_large = |error: axum::extract::multipart::MultipartError| {
        if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
            BrandingError::LogoTooLarge
        } else {
            BrandingError::LogoNotAnImage
        }
    };
    while let Some(field) = multipart.next_field().await.map_err(too_large)? {
        if field.name() == Some("logo") {
            return Ok(field.bytes().await.map_err(too_large)?.to_vec());
        }
    }
    Err(BrandingError::LogoNotAnImage)
}

pub async fn logo_form(
    State(state): State<ServerState>,
    session: Session,
    Path(tenant): Path<Uuid>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    let lang = Lang::from_headers(&headers);
    let owner = service::session::member_of(
        &state.services,
        &session,
        TenantId(tenant),
        Permission::ManageTeam,
    )
    .await?;
    let stored = match logo_of(multipart).await {
        Ok(bytes) => {
            engine::branding::set_logo(&state.services.pool, TenantId(tenant), owner.id, &bytes)
                .await
        }
        Err(refused) => Err(refused),
    };
    let flash = match stored {
        Ok(_) => Flash {
            kind: FlashKind::Success,
            message: lang.text(Msg::LogoSaved).to_owned(),
        },
        Err(BrandingError::Unexpected(error)) => return Err(ApiError::from(error)),
        Err(refused) => Flash {
            kind: FlashKind::Error,
            message: lang.format(Msg::LogoRefused, &[("reason", &in_lang(&refused, lang))]),
        },
    };
    guard::flash_into(&session, &flash).await?;
    Ok(Redirect::to(&format!("/admin/t/{tenant}/team")).into_response())
}
