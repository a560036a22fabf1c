//! The admins' side of transfer requests (`engine::transfers`): the
//! tenant's requests, and approving or refusing one that its receiving
//! account confirmed. Approval moves the binding in one transaction on the
//! audited unbind path; both accounts get a mail and the webhook event
//! `code.transferred` fires.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection, rejection::QueryRejection},
    response::IntoResponse,
};
use engine::{
    tenants::Permission,
    transfers::{self, TransferStatus},
};
use serde::Deserialize;

use super::{Caller, member_of_tenant, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{ErrorBody, TransferView},
    state::ServerState,
};

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TransfersQuery {
    /// Only requests in this state (`awaiting_admin`: those to decide).
    status: Option<TransferStatus>,
}

/// A tenant's transfer requests, newest first (at most 500).
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/transfers", tag = "admin",
    params(("tenant_id" = Uuid, Path, description = "The tenant"), TransfersQuery),
    responses(
        (status = 200, description = "The requests", body = [TransferView]),
        (status = 400, description = "Unknown status", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_transfers(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    query: Result<Query<TransfersQuery>, QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ViewConsole).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let list = transfers::list(&state.services.pool, tenant, query.status, 500).await?;
    Ok(Json(
        list.into_iter().map(TransferView::from).collect::<Vec<_>>(),
    ))
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct DecisionBody {
    /// Why: required to refuse (1 to 500 characters, quoted in both
    /// accounts' mail), optional to approve (kept in the audit log).
    #[serde(default)]
    reason: Option<String>,
}

/// Approves a request its receiving account confirmed: the code moves to
/// that account now (first use, accesses counted and extension go with
/// it), the learner who held it loses access, both get a mail. Audited
/// (`code.transferred`); webhook event `code.transferred`.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/transfers/{transfer_id}/approve", tag = "admin",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("transfer_id" = Uuid, Path, description = "The request"),
    ),
    request_body = DecisionBody,
    responses(
        (status = 200, description = "Approved: the code moved", body = TransferView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Not waiting for an admin (`transfer_not_open`), the code changed hands since (`code_changed`), the receiving account holds a code of the course (`target_has_code`) or is suspended or disabled (`target_blocked`), or the code moved as often as allowed (`transfer_limit_reached`)", body = ErrorBody),
        (status = 422, description = "Reason over 500 characters", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn approve_transfer(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, transfer_id)): Path<(String, String)>,
    body: Result<Json<DecisionBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageCourses).await?;
    let id = parse_id(&transfer_id)?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let transfer = transfers::approve(
        &state.services.pool,
        tenant,
        admin.id,
        id,
        body.reason.as_deref(),
        service::transfers::per_code_limit(&state.services),
    )
    .await?;
    Ok(Json(TransferView::from(transfer)))
}

/// Refuses a request its receiving account confirmed, with a reason both
/// accounts read in their mail. The code stays where it is. Audited
/// (`transfer.refused`).
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/transfers/{transfer_id}/refuse", tag = "admin",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("transfer_id" = Uuid, Path, description = "The request"),
    ),
    request_body = DecisionBody,
    responses(
        (status = 200, description = "Refused", body = TransferView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "No such request", body = ErrorBody),
        (status = 409, description = "Not waiting for an admin (`transfer_not_open`)", body = ErrorBody),
        (status = 422, description = "Missing reason, or over 500 characters", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn refuse_transfer(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, transfer_id)): Path<(String, String)>,
    body: Result<Json<DecisionBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageCourses).await?;
    let id = parse_id(&transfer_id)?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let transfer = transfers::refuse(
        &state.services.pool,
        tenant,
        admin.id,
        id,
        body.reason.as_deref().unwrap_or_default(),
    )
    .await?;
    Ok(Json(TransferView::from(transfer)))
}
