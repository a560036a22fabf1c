//! A tenant's branding (`engine::branding`): what its learners see of it
//! on its course pages and in its mails. Every member reads it; owners,
//! signed in, change it (API tokens never manage the team's settings).

use axum::{
    Json,
    body::Bytes,
    extract::{Path, State, rejection::BytesRejection, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    branding::{self, BrandingChange, BrandingError},
    tenants::{Permission, TenantId},
};
use serde::Deserialize;

use super::{Caller, member_of_tenant};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{BrandingView, ErrorBody},
    state::ServerState,
};

/// The most `PUT …/branding/logo` reads: one byte past the limit, so
/// that a larger logo is told apart and refused as too large.
pub const MAX_LOGO_BODY: usize = branding::MAX_LOGO_BYTES + 1;

/// A change of the branding: all of it, as `PUT` replaces.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BrandingBody {
    /// 1 to 120 visible characters.
    name: String,
    /// `#rrggbb`; absent, `null` or empty: the default.
    #[serde(default)]
    accent: Option<String>,
    /// An email address; absent, `null` or empty: none.
    #[serde(default)]
    support_email: Option<String>,
}

async fn current(state: &ServerState, tenant: TenantId) -> Result<BrandingView, ApiError> {
    branding::of(&state.services.pool, tenant)
        .await?
        .map(BrandingView::from)
        .ok_or_else(ApiError::not_found)
}

/// The tenant's branding.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/branding", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "The branding", body = BrandingView),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_branding(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ViewConsole).await?;
    Ok(Json(current(&state, tenant).await?))
}

/// Sets the name, accent and support address (owners, signed in). Every
/// field is checked before anything is written. Audited
/// (`tenant.branding_changed`).
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/branding", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body = BrandingBody,
    responses(
        (status = 200, description = "Changed", body = BrandingView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant (API tokens never are)", body = ErrorBody),
        (status = 422, description = "A bad name, accent or support address (`field` says which)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn put_branding(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<BrandingBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, owner) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageTeam).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let change = BrandingChange::parse(
        &body.name,
        body.accent.as_deref().unwrap_or_default(),
        body.support_email.as_deref().unwrap_or_default(),
    )?;
    branding::update(&state.services.pool, tenant, owner.id, &change).await?;
    Ok(Json(current(&state, tenant).await?))
}

/// Replaces the logo (owners, signed in): the body is the image itself, a
/// PNG, JPEG or WebP of at most 256 KiB, told by its bytes whatever its
/// `Content-Type`. Audited (`tenant.logo_changed`).
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/branding/logo", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "The image: PNG, JPEG or WebP, at most 262,144 bytes"),
    responses(
        (status = 200, description = "Stored: `logo_url` is the new logo's", body = BrandingView),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant (API tokens never are)", body = ErrorBody),
        (status = 413, description = "Larger than 256 KiB", body = ErrorBody),
        (status = 422, description = "Not a PNG, JPEG or WebP image", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn put_logo(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, owner) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageTeam).await?;
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::from(BrandingError::LogoTooLarge)
        } else {
            rejection(e, "invalid_body")
        }
    })?;
    branding::set_logo(&state.services.pool, tenant, owner.id, &bytes).await?;
    Ok(Json(current(&state, tenant).await?))
}

/// Removes the logo (owners, signed in; no logo is fine). Audited
/// (`tenant.logo_removed`) when there was one.
#[utoipa::path(delete, path = "/api/v1/tenants/{tenant_id}/branding/logo", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "No logo now", body = BrandingView),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant (API tokens never are)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn delete_logo(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, owner) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageTeam).await?;
    branding::remove_logo(&state.services.pool, tenant, owner.id).await?;
    Ok(Json(current(&state, tenant).await?))
}
