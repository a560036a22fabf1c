//! Admin endpoints on learners' access periods: extend one learner (named
//! by the code they hold), or everyone bound in a share so far.

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    response::IntoResponse,
};
use engine::{access_period, code_actions::CodeError, tenants::Permission};

use super::{Caller, member_of_code, member_of_share};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{AccessExtended, AccessExtendedAll, ErrorBody, ExtendBody},
    state::ServerState,
};

/// An API client's extension date: RFC 3339 (in the future is the
/// engine's to check).
fn parse_until(raw: &str) -> Result<time::OffsetDateTime, CodeError> {
    time::OffsetDateTime::parse(raw.trim(), &time::format_description::well_known::Rfc3339)
        .map_err(|_| CodeError::InvalidExtension)
}

/// Extends the access of the learner holding a code to a date (a later
/// end they already have stays). Audited `access.extended`.
#[utoipa::path(post, path = "/api/v1/codes/{code_id}/extend-access", tag = "admin",
    params(("code_id" = Uuid, Path, description = "The code the learner holds")),
    request_body = ExtendBody,
    responses(
        (status = 200, description = "Extended", body = AccessExtended),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 409, description = "Nobody holds the code (`code_not_bound`), or the course gives access for good (`no_access_period`)", body = ErrorBody),
        (status = 422, description = "Not an RFC 3339 date, or not in the future", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn extend_one(
    State(state): State<ServerState>,
    caller: Caller,
    Path(code_id): Path<String>,
    body: Result<Json<ExtendBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, code, admin) = member_of_code(&state, &caller, &code_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let until = parse_until(&body.until)?;
    let access_ends =
        access_period::extend_one(&state.services.pool, tenant, admin.id, code, until).await?;
    Ok(Json(AccessExtended {
        code_id: code,
        access_ends,
    }))
}

/// Extends the access of everyone bound in a share so far to a date;
/// learners who bind later get the share's full period. Audited
/// `access.extended_all`.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/extend-access", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body = ExtendBody,
    responses(
        (status = 200, description = "Extended", body = AccessExtendedAll),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "The course gives access for good (`no_access_period`)", body = ErrorBody),
        (status = 422, description = "Not an RFC 3339 date, or not in the future", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn extend_all(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<ExtendBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let until = parse_until(&body.until)?;
    let extended = access_period::extend_all(
        &state.services.pool,
        share.tenant(),
        admin.id,
        share.id,
        until,
    )
    .await?;
    Ok(Json(AccessExtendedAll {
        share_id: share.id.0,
        extended,
    }))
}
