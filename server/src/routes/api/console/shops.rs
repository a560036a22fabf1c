//! A tenant's shops (`engine::shops`): connect one (the URL to give the
//! shop, and Gumroad's drawn secret, answered once), read one with its
//! products, rotate its secret, disable it, say which product sells which
//! share, and read its latest deliveries ("Shop events"). Reading needs
//! `ManageIntegrations`, as API tokens and webhooks do; every change also
//! needs `ManageCourses` (what a shop issues is codes of the courses). The shops' own
//! deliveries arrive at `routes::api::shop_hooks`.

use axum::{
    Json,
    extract::{Path, Query, State, rejection::JsonRejection},
    http::StatusCode,
    response::IntoResponse,
};
use engine::{
    shares::ShareId,
    shops::{self, Integration, Provider},
    tenants::{Permission, TenantId},
};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Caller, member_of_tenant, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{routes::api::schema::ErrorBody, state::ServerState};

/// A connected shop (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct ShopBody {
    pub id: Uuid,
    /// `stripe`, `lemonsqueezy`, `shopify` or `gumroad`.
    pub provider: String,
    pub name: String,
    /// The `source` of the orders it places (`GET
    /// /api/v1/orders/{source}/{order_id}`): its own, so that its refunds
    /// reach its orders alone.
    pub order_source: String,
    /// Where the shop sends its webhooks (Gumroad's also needs
    /// `?secret=…`, in `ConnectedShop` when the secret is drawn or set).
    pub webhook_url: String,
    /// Until when the secret before the last rotation is still accepted.
    #[serde(with = "time::serde::rfc3339::option")]
    pub previous_secret_until: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// A disabled shop's deliveries are refused (404).
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<OffsetDateTime>,
    /// Its products and the shares they sell (in a single shop's answer;
    /// empty in a list).
    pub products: Vec<ProductBody>,
}

/// A product of a shop and the share it sells.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProductBody {
    pub product: String,
    pub share_id: Uuid,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewShopBody {
    /// `stripe`, `lemonsqueezy`, `shopify` or `gumroad`.
    provider: String,
    /// 1 to 80 characters: which account of the shop.
    name: String,
    /// The shop's signing secret (Stripe: the endpoint's `whsec_…`; Lemon
    /// Squeezy: the webhook's signing secret; Shopify: the app's secret).
    /// Gumroad: leave it out, and AdmitOne draws one for the ping URL.
    secret: Option<String>,
}

/// A shop just connected or its secret rotated: `secret` is answered only
/// when AdmitOne drew it (Gumroad), this once; a Gumroad shop's
/// `webhook_url` carries its secret, drawn or given.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectedShop {
    pub shop: ShopBody,
    pub secret: Option<String>,
    pub webhook_url: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SecretBody {
    /// The shop's new signing secret (Gumroad: leave it out to draw one).
    secret: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct MapProductBody {
    /// The share this product sells.
    share_id: Uuid,
}

/// A delivery of a shop's, as stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShopEventBody {
    pub id: Uuid,
    #[serde(with = "time::serde::rfc3339")]
    pub received_at: OffsetDateTime,
    /// The shop's event type, when the delivery was read.
    pub kind: Option<String>,
    /// The shop's event id, where it sends one.
    pub event_ref: Option<String>,
    /// `acted`, `ignored`, `refused`, or `received` (failed midway: the
    /// shop delivers it again).
    pub outcome: String,
    pub reason: Option<String>,
    /// The orders it placed or refunded.
    pub orders: Vec<Uuid>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct EventsQuery {
    /// 1 to 200 (default 50).
    limit: Option<i64>,
}

fn webhook_url(state: &ServerState, tenant: TenantId, id: Uuid) -> String {
    shops::webhook_url(&state.settings.public_origin(), tenant, id)
}

fn shop_body(state: &ServerState, shop: Integration, products: Vec<shops::Product>) -> ShopBody {
    ShopBody {
        id: shop.id,
        provider: shop.provider.as_str().to_owned(),
        name: shop.name,
        order_source: shop.order_source,
        webhook_url: webhook_url(state, shop.tenant, shop.id),
        previous_secret_until: shop.previous_until,
        created_at: shop.created_at,
        disabled_at: shop.disabled_at,
        products: products
            .into_iter()
            .map(|p| ProductBody {
                product: p.product_ref,
                share_id: p.share.0,
            })
            .collect(),
    }
}

/// The answer to a connection or a rotation: a Gumroad shop's address
/// carries its secret, drawn or `given` (the caller set it).
fn connected(
    state: &ServerState,
    shop: &Integration,
    body: ShopBody,
    drawn: Option<String>,
    given: Option<&str>,
) -> ConnectedShop {
    let webhook_url = shops::webhook_address(
        &state.settings.public_origin(),
        shop.tenant,
        shop.id,
        shop.provider,
        drawn.as_deref().or(given),
    );
    ConnectedShop {
        shop: body,
        secret: drawn,
        webhook_url,
    }
}

async fn shop_in(
    state: &ServerState,
    caller: &Caller,
    tenant_id: &str,
    shop_id: &str,
) -> Result<(TenantId, engine::accounts::AccountId, Uuid), ApiError> {
    let (tenant, admin) =
        member_of_tenant(state, caller, tenant_id, Permission::ManageIntegrations).await?;
    Ok((tenant, admin.id, parse_id(shop_id)?))
}

/// A change to what a shop may issue: a shop's deliveries place orders
/// (codes of the tenant's courses), so whoever connects one, maps its
/// products or sets its secret must also be allowed to manage courses
/// (a token needs `write` beside `integrations`), as placing an order
/// through the API does.
async fn shop_manager(
    state: &ServerState,
    caller: &Caller,
    tenant_id: &str,
) -> Result<(TenantId, engine::accounts::AccountId), ApiError> {
    let (tenant, admin) =
        member_of_tenant(state, caller, tenant_id, Permission::ManageIntegrations).await?;
    caller
        .member_of(state, tenant, Permission::ManageCourses)
        .await?;
    Ok((tenant, admin.id))
}

/// Lists the tenant's shops, newest first.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/shops", tag = "integrations",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "The shops", body = Vec<ShopBody>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_shops(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let list = shops::list(&state.services.pool, tenant).await?;
    Ok(Json(
        list.into_iter()
            .map(|shop| shop_body(&state, shop, Vec::new()))
            .collect::<Vec<_>>(),
    ))
}

/// Connects a shop: give the shop the answer's `webhook_url`.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shops", tag = "integrations",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    request_body = NewShopBody,
    responses(
        (status = 201, description = "Connected; a drawn secret is shown this once", body = ConnectedShop),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations` or `write`", body = ErrorBody),
        (status = 422, description = "Bad provider, name or secret, or no secret for a shop that signs with its own", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn connect_shop(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    body: Result<Json<NewShopBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) = shop_manager(&state, &caller, &tenant_id).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let provider = Provider::parse(&body.provider)?;
    let done = shops::connect(
        &state.services.pool,
        tenant,
        admin,
        provider,
        &body.name,
        body.secret.as_deref(),
    )
    .await?;
    let body_out = shop_body(&state, done.integration.clone(), Vec::new());
    Ok((
        StatusCode::CREATED,
        Json(connected(
            &state,
            &done.integration,
            body_out,
            done.drawn_secret,
            body.secret.as_deref(),
        )),
    ))
}

/// Reads a shop and its products.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
    ),
    responses(
        (status = 200, description = "The shop", body = ShopBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such shop in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_shop(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _, id) = shop_in(&state, &caller, &tenant_id, &shop_id).await?;
    let pool = &state.services.pool;
    let shop = shops::get(pool, tenant, id).await?;
    let products = shops::products(pool, tenant, id).await?;
    Ok(Json(shop_body(&state, shop, products)))
}

/// Replaces a shop's signing secret; the one before stays accepted for
/// 24 hours (deliveries the shop signed with it).
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}/secret", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
    ),
    request_body = SecretBody,
    responses(
        (status = 200, description = "Rotated; a drawn secret is shown this once", body = ConnectedShop),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations` or `write`", body = ErrorBody),
        (status = 404, description = "No such shop in this tenant", body = ErrorBody),
        (status = 422, description = "Bad secret, or none for a shop that signs with its own", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn rotate_secret(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id)): Path<(String, String)>,
    body: Result<Json<SecretBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) = shop_manager(&state, &caller, &tenant_id).await?;
    let id = parse_id(&shop_id)?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let pool = &state.services.pool;
    let drawn = shops::rotate_secret(pool, tenant, admin, id, body.secret.as_deref()).await?;
    let shop = shops::get(pool, tenant, id).await?;
    let out = shop_body(
        &state,
        shop.clone(),
        shops::products(pool, tenant, id).await?,
    );
    Ok(Json(connected(
        &state,
        &shop,
        out,
        drawn,
        body.secret.as_deref(),
    )))
}

/// Disables a shop: its deliveries are refused from now on.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}/disable", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
    ),
    responses(
        (status = 200, description = "Disabled (or was)", body = ShopBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations` or `write`", body = ErrorBody),
        (status = 404, description = "No such shop in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn disable_shop(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) = shop_manager(&state, &caller, &tenant_id).await?;
    let id = parse_id(&shop_id)?;
    let shop = shops::disable(&state.services.pool, tenant, admin, id).await?;
    Ok(Json(shop_body(&state, shop, Vec::new())))
}

/// Says which share a product of the shop sells (replacing what it sold:
/// later sales only).
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}/products/{product}", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
        ("product" = String, Path, description = "The shop's product id (Stripe: `metadata.admitone_product` or the payment link's id)"),
    ),
    request_body = MapProductBody,
    responses(
        (status = 200, description = "Mapped", body = ProductBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations` or `write`", body = ErrorBody),
        (status = 404, description = "No such shop or share in this tenant", body = ErrorBody),
        (status = 422, description = "Bad product id", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn map_product(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id, product)): Path<(String, String, String)>,
    body: Result<Json<MapProductBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) = shop_manager(&state, &caller, &tenant_id).await?;
    let id = parse_id(&shop_id)?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let mapped = shops::map_product(
        &state.services.pool,
        tenant,
        admin,
        id,
        &product,
        ShareId(body.share_id),
    )
    .await?;
    Ok(Json(ProductBody {
        product: mapped.product_ref,
        share_id: mapped.share.0,
    }))
}

/// Forgets a product: its later sales are refused as unknown.
#[utoipa::path(delete, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}/products/{product}", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
        ("product" = String, Path, description = "The shop's product id"),
    ),
    responses(
        (status = 204, description = "Forgotten"),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations` or `write`", body = ErrorBody),
        (status = 404, description = "No such product of a shop of this tenant", body = ErrorBody),
        (status = 422, description = "Bad product id", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn unmap_product(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id, product)): Path<(String, String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) = shop_manager(&state, &caller, &tenant_id).await?;
    let id = parse_id(&shop_id)?;
    shops::unmap_product(&state.services.pool, tenant, admin, id, &product).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A shop's latest deliveries, newest first: received, acted on,
/// ignored or refused, and why.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/shops/{shop_id}/events", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("shop_id" = Uuid, Path, description = "The shop"),
        EventsQuery,
    ),
    responses(
        (status = 200, description = "The deliveries", body = Vec<ShopEventBody>),
        (status = 400, description = "A query that does not parse", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such shop in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_events(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, shop_id)): Path<(String, String)>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _, id) = shop_in(&state, &caller, &tenant_id, &shop_id).await?;
    let Query(query) = query.map_err(|e| rejection(e, "invalid_query"))?;
    let events = shops::recent_events(
        &state.services.pool,
        tenant,
        id,
        query.limit.unwrap_or(50),
        shops::Deliveries::All,
    )
    .await?;
    Ok(Json(
        events
            .into_iter()
            .map(|e| ShopEventBody {
                id: e.id,
                received_at: e.received_at,
                kind: e.kind,
                event_ref: e.event_ref,
                outcome: e.outcome,
                reason: e.reason,
                orders: e.order_ids,
            })
            .collect::<Vec<_>>(),
    ))
}
