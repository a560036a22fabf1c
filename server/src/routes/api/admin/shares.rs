//! Admin endpoints on a share itself: create one in a tenant, set its
//! status. Split from `admin/mod.rs` by concern; behaviour unchanged.

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    shares::{self, NewShare, Share, ShareError, ShareInput, ShareStatus},
    tenants::Permission,
    tenants::TenantId,
};
use serde::Deserialize;
use service::ServiceError;

use super::{Caller, admin_of_share, parse_id};
use crate::{
    routes::api::{
        error::{ApiError, rejection},
        schema::{ErrorBody, StatusChanged},
    },
    startup::ServerState,
};

/// Creates a share in a tenant.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shares", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body = ShareInput,
    responses(
        (status = 201, description = "Created", body = Share),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 422, description = "Invalid field, or the link name is taken (`slug_taken`)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn create_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<ShareInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let tenant =
        TenantId(parse_id(&tenant_id).map_err(|_| ApiError::from(ServiceError::Forbidden))?);
    let admin = caller
        .admin_of(&state, tenant, Permission::ManageCourses)
        .await?;
    let Json(input) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let new = NewShare::parse(input)?;
    let share = shares::create_share(&state.services.pool, tenant, admin.id, new).await?;
    Ok((StatusCode::CREATED, Json(share)))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct StatusBody {
    /// `draft`, `active`, `paused` or `archived`.
    status: String,
}

/// Sets a share's status.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/status", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body = StatusBody,
    responses(
        (status = 200, description = "Changed", body = StatusChanged),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 422, description = "Invalid status", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn set_status(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<StatusBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        admin_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let status = ShareStatus::parse(&body.status).map_err(ShareError::from)?;
    shares::set_status(
        &state.services.pool,
        share.tenant(),
        admin.id,
        share.id,
        status,
    )
    .await?;
    Ok(Json(StatusChanged {
        id: share.id.0,
        status,
    }))
}
