//! Admin endpoints on a share's code batches: list them, read one with its
//! codes counted by state, take the one-time CSV of codes parked for the
//! caller, revoke a batch's unused codes (a batch handed to the wrong
//! class, or never delivered). Issuing a batch is `codes::issue_codes`.

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    response::{IntoResponse, Response},
};
use engine::tenants::Permission;

use super::{Caller, member_of_share, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{BatchBody, BatchDetail, BatchRevoked, ErrorBody, ExpiryBody},
    state::ServerState,
};

/// Lists a share's batches, newest first.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/batches", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The batches", body = Vec<BatchBody>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_batches(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let rows =
        engine::read_models::batches(&state.services.reads, share.tenant(), share.id).await?;
    Ok(Json(
        rows.into_iter()
            .map(|b| BatchBody {
                id: b.id,
                label: b.label,
                count: b.count,
                created_at: b.created_at,
                expires_at: b.expires_at,
            })
            .collect::<Vec<_>>(),
    ))
}

/// A batch of `batch_id` and the member acting on it with `permission`:
/// 401/403 before revealing whether it exists, 404 then.
pub(super) async fn batch_of(
    state: &ServerState,
    caller: &Caller,
    batch_id: &str,
    permission: Permission,
) -> Result<
    (
        engine::batches::BatchSummary,
        engine::accounts::Principal,
        engine::tenants::TenantId,
    ),
    ApiError,
> {
    let batch = parse_id(batch_id)?;
    let pool = &state.services.pool;
    let among = caller.tenants(state).await?;
    let Some((tenant, _share)) = engine::batches::owner_of_batch(pool, &among, batch).await? else {
        return Err(caller.refuse(state).await);
    };
    let admin = caller.member_of(state, tenant, permission).await?;
    let summary = engine::batches::summary(pool, tenant, batch)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok((summary, admin, tenant))
}

/// Reads a batch with its codes counted by state.
#[utoipa::path(get, path = "/api/v1/batches/{batch_id}", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch")),
    responses(
        (status = 200, description = "The batch", body = BatchDetail),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_batch(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (b, _, _) = batch_of(&state, &caller, &batch_id, Permission::ViewConsole).await?;
    Ok(Json(detail(b)))
}

fn detail(b: engine::batches::BatchSummary) -> BatchDetail {
    BatchDetail {
        id: b.id,
        share_id: b.share.0,
        label: b.label,
        count: b.count,
        created_at: b.created_at,
        expires_at: b.expires_at,
        unused: b.unused,
        bound: b.bound,
        revoked: b.revoked,
        expired: b.expired,
    }
}

/// Sets when a batch's unused codes stop working, or that they never do
/// (`null`). Codes already bound keep working; a code with its own date
/// keeps it. Audited.
#[utoipa::path(post, path = "/api/v1/batches/{batch_id}/expiry", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch")),
    request_body = ExpiryBody,
    responses(
        (status = 200, description = "The batch with its new date", body = BatchDetail),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
        (status = 422, description = "Not an RFC 3339 date, or not in the future", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn set_expiry(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
    body: Result<Json<ExpiryBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (b, admin, tenant) =
        batch_of(&state, &caller, &batch_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let expires_at = parse_expiry(body.expires_at.as_deref())?;
    let pool = &state.services.pool;
    engine::batches::set_batch_expiry(pool, tenant, admin.id, b.id, expires_at).await?;
    let after = engine::batches::summary(pool, tenant, b.id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(detail(after)))
}

/// An API client's expiry date: RFC 3339 or none (in the future is the
/// engine's to check).
pub(super) fn parse_expiry(
    raw: Option<&str>,
) -> Result<Option<time::OffsetDateTime>, engine::batches::BatchError> {
    raw.map(|raw| {
        time::OffsetDateTime::parse(raw.trim(), &time::format_description::well_known::Rfc3339)
            .map_err(|_| engine::batches::BatchError::InvalidExpiry)
    })
    .transpose()
}

/// The plain codes of a batch issued in the console (or of a replacement
/// code made in the console: pass its code id), once, as CSV:
/// `code,link,batch_label`. Only the
/// member who issued them gets them (a token acts as the member who made
/// it), within 15 minutes of issuing; a completed download removes them,
/// a broken one can be repeated. `409 download_in_progress` while another
/// download of them runs, `410 already_downloaded` once they are gone. (A
/// batch issued through this API has its codes in the issuing answer.)
#[utoipa::path(get, path = "/api/v1/batches/{batch_id}/codes.csv", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch, or a replacement code's id")),
    responses(
        (status = 200, description = "The plain codes, streamed, once", content_type = "text/csv", body = String),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
        (status = 409, description = "Another download of these codes is running", body = ErrorBody),
        (status = 410, description = "Downloaded already, or no longer held", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn codes_csv(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
) -> Result<Response, ApiError> {
    let id = parse_id(&batch_id)?;
    let pool = &state.services.pool;
    // A batch, or a replacement code's own handover (named by the code).
    let among = caller.tenants(&state).await?;
    let owner = match engine::batches::owner_of_batch(pool, &among, id).await? {
        Some(owner) => Some(owner),
        None => engine::code_table::share_of_code(pool, &among, id).await?,
    };
    let Some((tenant, share)) = owner else {
        return Err(caller.refuse(&state).await);
    };
    // Plain codes: for those who may issue them.
    let admin = caller
        .member_of(&state, tenant, Permission::ManageCourses)
        .await?;
    let share = engine::shares::get_in(pool, tenant, share)
        .await?
        .ok_or_else(ApiError::not_found)?;
    crate::exports::handover::download(&state.services, admin.id, &caller.login(), &share, id).await
}

/// Revokes every unused code of a batch, for good; bound codes keep their
/// learners. Repeating it revokes nothing more (`revoked: 0`).
#[utoipa::path(post, path = "/api/v1/batches/{batch_id}/revoke-unused", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch")),
    responses(
        (status = 200, description = "Revoked", body = BatchRevoked),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown batch answers 403, as another tenant's does)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn revoke_unused(
    State(state): State<ServerState>,
    caller: Caller,
    Path(batch_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let batch = parse_id(&batch_id)?;
    let pool = &state.services.pool;
    // Authorise before revealing whether the batch exists.
    let Some((tenant, _share)) =
        engine::batches::owner_of_batch(pool, &caller.tenants(&state).await?, batch).await?
    else {
        return Err(caller.refuse(&state).await);
    };
    let admin = caller
        .member_of(&state, tenant, Permission::ManageCourses)
        .await?;
    let revoked = engine::batches::revoke_unused_of_batch(pool, tenant, admin.id, batch).await?;
    Ok(Json(BatchRevoked {
        batch_id: batch,
        revoked,
    }))
}
