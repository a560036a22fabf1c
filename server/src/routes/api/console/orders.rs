//! Orders: a shop's sale turned into codes once (`engine::orders`).
//! `POST /api/v1/shares/{share_id}/orders` records the order and issues
//! its codes (addressed to the buyer when it is for one, mailed unless
//! the caller hands them over itself); the same `(source, order_id)`
//! again answers the first call, with `replayed: true`, and issues
//! nothing. `GET /api/v1/orders/{source}/{order_id}` reads an order and
//! its codes as they stand (hints, states and holders; never the codes).
//! Refunds: `refunds.rs`.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    accounts::{Email, Principal},
    orders::{self, OrderError, OrderRef, OrderRequest, OrderSource, Placed},
    refunds,
    tenants::{Permission, TenantId},
};
use model::Lang;
use serde::Deserialize;
use uuid::Uuid;

use super::{Caller, member_of_share};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::schema::{
        ErrorBody, OrderBody, OrderCodeBody, PlacedOrder, PlacedOrderCode, RefundBody,
    },
    state::ServerState,
};

/// An order, as a shop or an integrator sends it.
#[derive(Deserialize, utoipa::ToSchema)]
pub struct OrderInput {
    /// The shop: 1 to 32 of `a-z0-9-_` (`stripe`, `gumroad`, or your own).
    source: String,
    /// The order's id in that shop: 1 to 200 characters. With `source`,
    /// what makes a replay a replay.
    order_id: String,
    /// The buyer's address.
    email: String,
    /// 1 to 1,000 codes; 1 if absent.
    quantity: Option<i64>,
    /// Address the code to the buyer: it binds only to the account whose
    /// verified address is `email`. Absent: yes for one code, no for
    /// several (one account holds one code of a course, so several codes
    /// cannot all be the buyer's).
    addressed: Option<bool>,
    /// Mail the codes to the buyer (default `true`); `false` when you hand
    /// them over yourself (they are in this answer).
    mail: Option<bool>,
    /// The mail's language (`en`, `zh-CN`, `zh-TW`); absent: the buyer's
    /// account's if they have one, else English (which one is not said).
    lang: Option<String>,
}

/// Records an order and issues its codes, or answers it again.
#[utoipa::path(post, path = "/api/v1/shares/{share_id}/orders", tag = "admin",
    params(("share_id" = Uuid, Path, description = "The share the order is for")),
    request_body = OrderInput,
    responses(
        (status = 201, description = "Recorded now: the codes were issued (and the mail queued)", body = PlacedOrder),
        (status = 200, description = "Recorded before under this source and order id: the first call's order (`replayed`), nothing issued; the codes in full only for the member who placed it, within 15 minutes", body = PlacedOrder),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin of this tenant, or the token lacks the scope", body = ErrorBody),
        (status = 404, description = "Not an id (an unknown share answers 403, as another tenant's does)", body = ErrorBody),
        (status = 409, description = "This order was recorded before with other details (`order_conflict`); or other requests for this order held it for seconds (`busy_retry`, `Retry-After`): nothing was done, retry", body = ErrorBody),
        (status = 422, description = "Invalid source, order id, email, quantity, language, or several codes addressed", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn place_order(
    State(state): State<ServerState>,
    caller: Caller,
    Path(share_id): Path<String>,
    body: Result<Json<OrderInput>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (share, admin) =
        member_of_share(&state, &caller, &share_id, Permission::ManageCourses).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let lang = body
        .lang
        .as_deref()
        .map(|tag| Lang::parse(tag.trim()).ok_or(OrderError::InvalidLang))
        .transpose()?;
    let source = OrderSource::parse(&body.source)?;
    if source.is_a_shops() {
        return Err(OrderError::SourceOfAShop.into());
    }
    let request = OrderRequest {
        share: share.id,
        source,
        order_ref: OrderRef::parse(&body.order_id)?,
        buyer: Email::parse(&body.email).map_err(|_| OrderError::InvalidEmail)?,
        quantity: body.quantity.unwrap_or(1),
        addressed: body.addressed,
        mail: body.mail.unwrap_or(true),
        lang,
    };
    let services = &state.services;
    let placed = orders::place(
        &services.pool,
        &services.keyring,
        share.tenant_id,
        admin.id,
        &request,
    )
    .await?;
    let status = match placed {
        Placed::New(_) => StatusCode::CREATED,
        Placed::Replayed(_) => StatusCode::OK,
    };
    let replayed = matches!(placed, Placed::Replayed(_));
    let order = placed.order();
    // A shop's retry of an order refunded since says so.
    let refund = match placed {
        Placed::New(_) => None,
        Placed::Replayed(_) => refunds::recorded(&services.pool, share.tenant_id, order.id).await?,
    };
    // The codes themselves: to whoever placed the order, and again to
    // the same member's retries for a while; to nobody else, ever.
    let reveal = !replayed || order.reveals_codes_to(admin.id, time::OffsetDateTime::now_utc());
    let codes = order
        .codes
        .iter()
        .zip(order.plain_codes(&services.keyring))
        .map(|(code, plain)| PlacedOrderCode {
            id: code.id,
            code: plain.filter(|_| reveal).map(|plain| plain.display()),
            hint: code.hint.clone(),
            state: code.state,
        })
        .collect();
    Ok((
        status,
        Json(PlacedOrder {
            order: body_of(order, refund.as_ref()),
            replayed,
            codes,
        }),
    ))
}

/// Which tenant's order, for a member of several.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OrderQuery {
    /// The tenant that recorded it; needed only when the caller is a
    /// member of several that recorded this `(source, order_id)`.
    pub(super) tenant_id: Option<Uuid>,
}

/// Reads an order: its codes' states and holders (never the codes).
#[utoipa::path(get, path = "/api/v1/orders/{source}/{order_id}", tag = "admin",
    params(
        ("source" = String, Path, description = "The shop, as the order was placed"),
        ("order_id" = String, Path, description = "The order's id in that shop (URL-encoded)"),
        OrderQuery,
    ),
    responses(
        (status = 200, description = "The order", body = OrderBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not a member of a tenant that recorded this order (an unknown order answers the same), or the token lacks the scope", body = ErrorBody),
        (status = 422, description = "Invalid source or order id, or several of the caller's tenants recorded it and `tenant_id` does not name one", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_order(
    State(state): State<ServerState>,
    caller: Caller,
    Path((source, order_id)): Path<(String, String)>,
    Query(query): Query<OrderQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let source = OrderSource::parse(&source)?;
    let order_ref = OrderRef::parse(&order_id)?;
    let (tenant, _) = order_tenant(
        &state,
        &caller,
        (&source, &order_ref),
        query.tenant_id,
        Permission::ViewConsole,
    )
    .await?;
    let pool = &state.services.pool;
    let order = orders::get(pool, tenant, &source, &order_ref)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let refund = refunds::recorded(pool, tenant, order.id).await?;
    Ok(Json(body_of(&order, refund.as_ref())))
}

/// The tenant of the caller's that recorded the order, where the caller
/// has `permission`: an unknown order answers as another tenant's does.
pub(super) async fn order_tenant(
    state: &ServerState,
    caller: &Caller,
    (source, order_ref): (&OrderSource, &OrderRef),
    named: Option<Uuid>,
    permission: Permission,
) -> Result<(TenantId, Principal), ApiError> {
    let among = caller.tenants(state).await?;
    let mut found = orders::tenants_with(&state.services.pool, &among, source, order_ref).await?;
    if let Some(tenant) = named {
        found.retain(|t| t.0 == tenant);
    }
    let tenant: TenantId = match found.as_slice() {
        [] => return Err(caller.refuse(state).await),
        [tenant] => *tenant,
        _ => {
            return Err(ApiError::invalid(
                "tenant_id",
                "several of your tenants recorded this order: name one with tenant_id",
            ));
        }
    };
    let member = caller.member_of(state, tenant, permission).await?;
    Ok((tenant, member))
}

pub(super) fn body_of(order: &orders::Order, refund: Option<&refunds::Refund>) -> OrderBody {
    OrderBody {
        refund: refund.map(|refund| RefundBody {
            kind: refund.kind.as_str().to_owned(),
            action: refund.action.as_str().to_owned(),
            reason: refund.reason.clone(),
            refunded_at: refund.refunded_at,
            revoke_bound_at: refund.revoke_bound_at,
            bound_revoked_at: refund.bound_revoked_at,
        }),
        id: order.id,
        tenant_id: order.tenant.0,
        source: order.source.clone(),
        order_id: order.order_ref.clone(),
        share_id: order.share.0,
        batch_id: order.batch_id,
        email: order.buyer_email.clone(),
        quantity: order.quantity,
        addressed: order.addressed,
        mailed: order.mailed,
        lang: order.lang.map(|lang| lang.tag().to_owned()),
        created_at: order.created_at,
        codes: order
            .codes
            .iter()
            .map(|code| OrderCodeBody {
                id: code.id,
                hint: code.hint.clone(),
                state: code.state,
                holder: code.holder.clone(),
                former_holder: code.former_holder.clone(),
                bound_at: code.bound_at,
            })
            .collect(),
    }
}
