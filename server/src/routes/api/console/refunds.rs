//! Refunds (`engine::refunds`): `POST
//! /api/v1/orders/{source}/{order_id}/refund` applies the order's share's
//! refund policy once (a retry, or a chargeback after a refund, answers
//! the first with `replayed: true`); `GET`/`PUT
//! /api/v1/shares/{share_id}/refund-policy` read and set that policy.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    orders::{self, OrderRef, OrderSource},
    refunds::{self, RefundAction, RefundKind, RefundPolicy, RefundRequest, Refunded},
    tenants::Permission,
};
use serde::Deserialize;
use uuid::Uuid;

use super::{
    Caller, member_of_share,
    orders::{OrderQuery, body_of, order_tenant},
};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{ErrorBody, RefundPolicyBody, RefundedOrder},
    state::ServerState,
};

/// A refund or a chargeback, as a shop reports it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundInput {
    /// `refund` (the default) or `chargeback`.
    kind: Option<String>,
    /// Why, for the audit log: 1 to 500 characters.
    reason: Option<String>,
}

/// Refunds an order: its share's refund policy is applied once.
#[utoipa::path(post, path = "/api/v1/orders/{source}/{order_id}/refund", tag = "admin",
    params(
        ("source" = String, Path, description = "The shop, as the order was placed"),
        ("order_id" = String, Path, description = "The order's id in that shop (URL-encoded)"),
        OrderQuery,
    ),
    request_body = RefundInput,
    responses(
        (status = 201, description = "Refunded now: the share's policy applied (`revoked`: the codes revoked now)", body = RefundedOrder),
        (status = 200, description = "Refunded before (a retry, or a chargeback after a refund): nothing done now (`replayed`)", body = RefundedOrder),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of a tenant that recorded this order (an unknown order answers the same), or the token lacks the scope", body = ErrorBody),
        (status = 409, description = "Other requests for this order held it for seconds (`busy_retry`, `Retry-After`): nothing was done, retry", body = ErrorBody),
        (status = 422, description = "Invalid source, order id, kind or reason, or several of the caller's tenants recorded it and `tenant_id` does not name one", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn refund_order(
    State(state): State<ServerState>,
    caller: Caller,
    Path((source, order_id)): Path<(String, String)>,
    Query(query): Query<OrderQuery>,
    body: Result<Json<RefundInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let source = OrderSource::parse(&source)?;
    let order_ref = OrderRef::parse(&order_id)?;
    let (tenant, admin) = order_tenant(
        &state,
        &caller,
        (&source, &order_ref),
        query.tenant_id,
        Permission::ManageCourses,
    )
    .await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let request = RefundRequest {
        source: &source,
        order_ref: &order_ref,
        kind: body
            .kind
            .as_deref()
            .map_or(Ok(RefundKind::Refund), RefundKind::parse)?,
        reason: body.reason.as_deref(),
    };
    let pool = &state.services.pool;
    let refunded = refunds::refund(pool, tenant, admin.id, &request).await?;
    let (status, revoked) = match &refunded {
        Refunded::New { revoked, .. } => (StatusCode::CREATED, revoked.clone()),
        Refunded::Replayed(_) => (StatusCode::OK, Vec::new()),
    };
    let order = orders::get(pool, tenant, &source, &order_ref)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok((
        status,
        Json(RefundedOrder {
            order: body_of(&order, Some(refunded.refund())),
            replayed: matches!(refunded, Refunded::Replayed(_)),
            revoked,
        }),
    ))
}

/// A share's refund policy, as set.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundPolicyInput {
    /// `revoke`: the order's unused codes at once, its bound ones after
    /// `bound_grace_hours`; `flag`: nothing revoked, the order marked.
    action: String,
    /// 0 (at once, the default) to 2,160 hours; only with `revoke`.
    bound_grace_hours: Option<i64>,
}

fn policy_body(share: Uuid, policy: RefundPolicy) -> RefundPolicyBody {
    RefundPolicyBody {
        share_id: share,
        action: policy.action().as_str().to_owned(),
        bound_grace_hours: policy.bound_grace_hours(),
    }
}

/// Reads a share's refund policy (`revoke` at once when none was set).
#[utoipa::path(get, path = "/api/v1/shares/{share_id}/refund-policy", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    responses(
        (status = 200, description = "The policy", body = RefundPolicyBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_refund_policy(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, _) = member_of_share(&state, &caller, &share_id, Permission::ViewConsole).await?;
    let policy = refunds::policy(&state.services.pool, share.tenant_id, share.id).await?;
    Ok(Json(policy_body(share.id.0, policy)))
}

/// Sets a share's refund policy; orders refunded before keep theirs.
#[utoipa::path(put, path = "/api/v1/shares/{share_id}/refund-policy", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share")),
    request_body = RefundPolicyInput,
    responses(
        (status = 200, description = "The policy now", body = RefundPolicyBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id", body = ErrorBody),
        (status = 422, description = "Invalid action, or a grace out of range or with `flag`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn set_refund_policy(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<RefundPolicyInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let policy = RefundPolicy::new(
        RefundAction::parse(&body.action)?,
        body.bound_grace_hours.unwrap_or(0),
    )?;
    let policy = refunds::set_policy(
        &state.services.pool,
        share.tenant_id,
        admin.id,
        share.id,
        policy,
    )
    .await?;
    Ok(Json(policy_body(share.id.0, policy)))
}
