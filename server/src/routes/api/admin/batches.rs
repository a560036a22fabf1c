//! Admin endpoints on a share's code batches: list them, revoke a batch's
//! unused codes (a batch handed to the wrong class, or never delivered).
//! Issuing a batch is `codes::issue_codes`; its one-time download stays in
//! the console, where the handover is watched by a person.

use axum::{
    Json,
    extract::{Path, State},
    response::IntoResponse,
};
use engine::tenants::Permission;

use super::{Caller, admin_of_share, parse_id};
use crate::{
    routes::api::{
        error::ApiError,
        schema::{BatchBody, BatchRevoked, ErrorBody},
    },
    startup::ServerState,
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
    let (share, _) = admin_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let rows = engine::console::batches(&state.services.pool, share.tenant(), share.id).await?;
    Ok(Json(
        rows.into_iter()
            .map(|b| BatchBody {
                id: b.id,
                label: b.label,
                count: b.count,
                created_at: b.created_at,
            })
            .collect::<Vec<_>>(),
    ))
}

/// Revokes every unused code of a batch, for good; bound codes keep their
/// learners. Repeating it revokes nothing more (`revoked: 0`).
#[utoipa::path(post, path = "/api/v1/batches/{batch_id}/revoke-unused", tag = "admin",
    params(("batch_id" = Uuid, Path, description = "The batch")),
    responses(
        (status = 200, description = "Revoked", body = BatchRevoked),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such batch", body = ErrorBody),
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
    let Some((tenant, _share)) = engine::batches::owner_of_batch(pool, batch).await? else {
        return Err(caller.refuse(&state).await);
    };
    let admin = caller
        .admin_of(&state, tenant, Permission::ManageCourses)
        .await?;
    let revoked = engine::batches::revoke_unused_of_batch(pool, tenant, admin.id, batch).await?;
    Ok(Json(BatchRevoked {
        batch_id: batch,
        revoked,
    }))
}
