//! Admin endpoints for a share's content: list, the streamed upload
//! (`crate::uploads`, which the console's form upload uses too), rename,
//! move up or down, remove.

use axum::{
    Json,
    extract::{Multipart, Path, Query, State, rejection::JsonRejection, rejection::QueryRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{resources, tenants::Permission};
use serde::Deserialize;

use super::{Caller, member_of_share};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency,
        schema::{ErrorBody, UploadForm},
    },
    state::ServerState,
};

/// Lists a share's resources in their order.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/resources", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The resources, in order", body = Vec<engine::resources::Resource>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_resources(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let list = resources::resources(&state.services.pool, share.tenant(), share.id).await?;
    Ok(Json(list))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct ResourceChange {
    /// A new title (1 to 200 characters).
    title: Option<String>,
    /// `up` or `down`: one place in the list.
    #[schema(value_type = Option<String>)]
    #[serde(rename = "move")]
    direction: Option<String>,
}

/// Renames a resource and/or moves it one place up or down.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/resources/{resource_id}", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("resource_id" = Uuid, Path, description = "The resource"),
    ),
    request_body = ResourceChange,
    responses(
        (status = 200, description = "The resources, in their new order", body = Vec<engine::resources::Resource>),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 422, description = "Bad title or direction, or nothing to change", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn change_resource(
    State(state): State<ServerState>,
    caller: Caller,
    Path((share_id, resource_id)): Path<(String, String)>,
    body: Result<Json<ResourceChange>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let resource_id = super::parse_id(&resource_id)?;
    let Json(change) = body.map_err(|e| rejection(e, "invalid_json"))?;
    // Everything is checked before anything changes.
    let step = match change.direction.as_deref() {
        None => None,
        Some("up") => Some(-1),
        Some("down") => Some(1),
        Some(_) => return Err(ApiError::invalid("move", "`move` is `up` or `down`")),
    };
    if change.title.is_none() && step.is_none() {
        return Err(ApiError::invalid(
            "title",
            "send a `title`, a `move`, or both",
        ));
    }
    let pool = &state.services.pool;
    let exists = resources::resources(pool, share.tenant(), share.id)
        .await?
        .iter()
        .any(|r| r.id == resource_id);
    if !exists {
        return Err(ApiError::not_found());
    }
    if let Some(title) = &change.title {
        resources::rename_resource(pool, share.tenant(), admin.id, share.id, resource_id, title)
            .await?;
    }
    if let Some(step) = step {
        resources::move_resource(pool, share.tenant(), admin.id, share.id, resource_id, step)
            .await?;
    }
    Ok(Json(
        resources::resources(pool, share.tenant(), share.id).await?,
    ))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RemoveQuery {
    /// Remove it even though learners opened it (their records stay).
    force: Option<bool>,
}

/// Removes a resource and its bytes; once learners opened it, only with
/// `force=true`.
#[utoipa::path(delete, path = "/api/v1/shares/{share_id}/resources/{resource_id}", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("resource_id" = Uuid, Path, description = "The resource"),
        RemoveQuery,
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share or resource", body = ErrorBody),
        (status = 422, description = "Learners opened it (`resource_in_use`): send `force=true`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn remove_resource(
    State(state): State<ServerState>,
    caller: Caller,
    Path((share_id, resource_id)): Path<(String, String)>,
    query: Result<Query<RemoveQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let resource_id = super::parse_id(&resource_id)?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let key = resources::delete_resource(
        &state.services.pool,
        share.tenant(),
        admin.id,
        share.id,
        resource_id,
        query.force.unwrap_or(false),
    )
    .await?;
    // The row is gone for everyone; stray bytes are only disk space.
    if let Err(error) = state.services.storage.delete(&key).await {
        tracing::warn!(
            error = format!("{error:#}"),
            "removing a resource's bytes failed"
        );
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Uploads a file as a new resource of a share (streamed; size limited).
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/resources", tag = "admin",
    params(
        ("share_id" = Uuid, Path, description = "The share"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key stores nothing new and answers the original 201 (for 15 minutes); the file is not compared, only the share"),
    ),
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Stored", body = engine::resources::Resource),
        (status = 400, description = "Not a multipart body", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 409, description = "The Idempotency-Key's first attempt still runs, or its answer is no longer held", body = ErrorBody),
        (status = 413, description = "Larger than the configured limit (`too_large`), or past the tenant's storage quota (`storage_quota_exceeded`)", body = ErrorBody),
        (status = 422, description = "Missing file or bad title, or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn upload_resource(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    headers: axum::http::HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<axum::response::Response, ApiError> {
    let multipart = multipart.map_err(|e| rejection(e, "invalid_multipart"))?;
    let key = idempotency::key_of(&headers)?;
    // Who asks, for the key's scope (`upload` checks again as it stores).
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let scope = engine::idempotency::Scope {
        tenant: share.tenant(),
        actor: admin.id,
    };
    let task_state = state.clone();
    let login = caller.login();
    idempotency::create_once(
        &state,
        key,
        &login,
        scope,
        "upload_resource",
        share.id.0.as_bytes(),
        |resource: &resources::Resource| resource.id,
        async move { crate::uploads::upload(&task_state, &caller, &share_id, multipart).await },
    )
    .await
}
