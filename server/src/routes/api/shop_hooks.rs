//! `POST /hooks/shops/{tenant_id}/{shop_id}`: a shop's own webhook (Stripe, Lemon
//! Squeezy, Shopify, Gumroad), authenticated by its signature, not by a
//! session or a token. Parses the request into an
//! `engine::shops::intake::Delivery`, lets the engine verify, store and
//! act on it, and answers through the one taxonomy: 2xx when acted on or
//! ignored (the shop stops delivering it), else the refusal (the shop
//! delivers it again later; a sale of a product not connected yet goes
//! through once it is).

use axum::{
    Json,
    body::Bytes,
    extract::{Path, Query, State, rejection::QueryRejection},
    http::HeaderMap,
    response::IntoResponse,
};
use engine::{
    shops::intake::{self, Delivery, DeliveryError},
    tenants::TenantId,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::problem::{ApiError, rejection};
use crate::{routes::api::schema::ErrorBody, state::ServerState};

/// Gumroad's secret, in the ping's URL.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct HookQuery {
    /// Gumroad only: the secret AdmitOne drew for the shop.
    secret: Option<String>,
}

/// What came of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct HookAnswer {
    /// The stored delivery (the console's "Shop events").
    pub event_id: Uuid,
    /// `acted` or `ignored`.
    pub outcome: &'static str,
    pub reason: Option<String>,
    /// The orders it placed or refunded.
    pub orders: Vec<Uuid>,
}

/// A shop's webhook: a sale places an order per connected product, a
/// refund or a chargeback refunds the orders it names.
#[utoipa::path(post, path = "/hooks/shops/{tenant_id}/{shop_id}", tag = "shops",
    params(
        ("tenant_id" = String, Path, description = "The shop's tenant (from its `webhook_url`)"),
        ("shop_id" = String, Path, description = "The shop's id in AdmitOne (from its `webhook_url`)"),
        HookQuery,
        ("Stripe-Signature" = Option<String>, Header, description = "Stripe: `t=…,v1=…`"),
        ("X-Signature" = Option<String>, Header, description = "Lemon Squeezy: hex HMAC-SHA256 of the body"),
        ("X-Shopify-Hmac-Sha256" = Option<String>, Header, description = "Shopify: base64 HMAC-SHA256 of the body"),
        ("X-Shopify-Topic" = Option<String>, Header, description = "Shopify: `orders/paid`, `refunds/create`"),
    ),
    request_body(content = String, description = "The shop's event as it sends it (JSON; Gumroad: a form)", content_type = "application/json"),
    responses(
        (status = 200, description = "Acted on, or ignored (and why)", body = HookAnswer),
        (status = 401, description = "Missing or wrong signature, or a Stripe timestamp more than 5 minutes off (`bad_signature`)", body = ErrorBody),
        (status = 404, description = "No such shop, or it was disabled", body = ErrorBody),
        (status = 409, description = "The order was recorded before with other details (`order_conflict`); or other deliveries of this order held it for seconds (`busy_retry`): nothing was done, and the shop's retry acts", body = ErrorBody),
        (status = 413, description = "A body over 256 KiB", body = ErrorBody),
        (status = 422, description = "A body that cannot be read, a product not connected to a course (`unknown_product`), or an order AdmitOne refuses", body = ErrorBody),
    ))]
pub async fn receive(
    State(state): State<ServerState>,
    Path((tenant_id, shop_id)): Path<(String, String)>,
    query: Result<Query<HookQuery>, QueryRejection>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    // Not an id: no such shop (as an unknown one).
    let (Ok(tenant), Ok(integration)) = (Uuid::parse_str(&tenant_id), Uuid::parse_str(&shop_id))
    else {
        return Err(DeliveryError::NotFound.into());
    };
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    // Each shop's headers are the engine's to pick (`Provider`).
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let delivery = Delivery {
        tenant: TenantId(tenant),
        integration,
        headers: &headers,
        url_secret: query.secret.as_deref(),
        body: &body,
    };
    let services = &state.services;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let decided = intake::receive(&services.pool, &services.keyring, &delivery, now).await?;
    Ok(Json(HookAnswer {
        event_id: decided.event,
        outcome: if decided.acted { "acted" } else { "ignored" },
        reason: decided.reason,
        orders: decided.orders,
    }))
}
