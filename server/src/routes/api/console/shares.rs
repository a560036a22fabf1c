//! Admin endpoints on a share itself: list a tenant's, create one, read
//! one, replace its settings, set its status.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection, rejection::QueryRejection},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use engine::{
    idempotency::Scope,
    shares::{self, NewShare, Share, ShareError, ShareInput, ShareStatus},
    tenants::Permission,
};
use serde::Deserialize;
use uuid::Uuid;

use super::{Caller, member_of_share, member_of_tenant};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency,
        schema::{ErrorBody, ShareSummary, SharesPage, StatusChanged},
    },
    state::ServerState,
};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SharesQuery {
    /// The last share of the previous page (`next_after`).
    after: Option<Uuid>,
    /// 1 to 500 (default 100).
    limit: Option<i64>,
}

/// Lists a tenant's shares, newest first (keyset pages).
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/shares", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant"), SharesQuery),
    responses(
        (status = 200, description = "A page", body = SharesPage),
        (status = 400, description = "Malformed query", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_shares(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    query: Result<Query<SharesQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let limit = query.limit.unwrap_or(100).clamp(1, 500);
    let mut rows =
        engine::read_models::shares(&state.services.reads, tenant, query.after, limit + 1).await?;
    let has_more = rows.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(Json(SharesPage {
        next_after: if has_more {
            rows.last().map(|r| r.id)
        } else {
            None
        },
        has_more,
        shares: rows
            .into_iter()
            .map(|r| ShareSummary {
                id: r.id,
                slug: r.slug,
                title: r.title,
                status: r.status,
                issued: r.issued,
                bound: r.bound,
                revoked: r.revoked,
            })
            .collect(),
    }))
}

/// Reads a share: its settings and how much of its quota is used.
#[utoipa::path(get, path = "/api/v1/shares/{share_id}", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The share", body = Share),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    Ok(Json(share))
}

/// Creates a share in a tenant.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shares", tag = "admin",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key creates nothing new and answers the original 201 (for 15 minutes)"),
    ),
    request_body = ShareInput,
    responses(
        (status = 201, description = "Created (or, with a reused Idempotency-Key, the original answer, marked `Idempotent-Replayed: true`)", body = Share),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 409, description = "The Idempotency-Key's first attempt still runs, or its answer is no longer held", body = ErrorBody),
        (status = 422, description = "Invalid field, the link name is taken (`slug_taken`), or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn create_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
    body: Result<Json<ShareInput>, JsonRejection>,
) -> Result<Response, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageCourses).await?;
    let Json(input) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let key = idempotency::key_of(&headers)?;
    let request = serde_json::to_vec(&input).map_err(|e| anyhow::anyhow!("encoding: {e}"))?;
    let new = NewShare::parse(input)?;
    let pool = state.services.pool.clone();
    idempotency::create_once(
        &state,
        key,
        &caller.login(),
        Scope {
            tenant,
            actor: admin.id,
        },
        "create_share",
        &request,
        |share: &Share| share.id.0,
        async move { Ok(shares::create_share(&pool, tenant, admin.id, new).await?) },
    )
    .await
}

/// Replaces a share's settings. Absent `slug`, `status` and `access_days`
/// keep the current ones; every other field is replaced (an absent limit,
/// quota or date means none, an absent description is empty).
#[utoipa::path(put, path = "/api/v1/shares/{share_id}", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body = ShareInput,
    responses(
        (status = 200, description = "Saved", body = Share),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 422, description = "Invalid field, or the link name is taken (`slug_taken`)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn update_share(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<ShareInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(mut input) = body.map_err(|e| rejection(e, "invalid_json"))?;
    // Absent ones stay as the share has them under the update's lock (the
    // values filled in here only make the input parse).
    // An empty slug is an absent one (it would otherwise be made anew
    // from the title and change the public link).
    let kept = shares::Kept {
        slug: input.slug.as_deref().is_none_or(|s| s.trim().is_empty()),
        status: input.status.is_none(),
        access_days: input.access_days.is_none(),
    };
    if kept.slug {
        input.slug = None;
    }
    input.slug.get_or_insert_with(|| share.slug.clone());
    input
        .status
        .get_or_insert_with(|| share.status.as_str().to_owned());
    let new = NewShare::parse(input)?;
    let saved = shares::update_share(
        &state.services.pool,
        share.tenant(),
        admin.id,
        share.id,
        new,
        kept,
    )
    .await?;
    Ok(Json(saved))
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
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
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
