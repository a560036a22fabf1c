//! Admin endpoints for what connects a tenant to other systems: API tokens
//! (list, create with an optional expiry, revoke) and webhook endpoints
//! (list, create, disable, troubled deliveries, redeliver). They need
//! `ManageIntegrations`: an owner's or admin's session, or a token with the
//! `integrations` scope, which never mints a token that does more than
//! itself or outlives it.

use axum::{
    Json,
    extract::{Path, State, rejection::JsonRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use engine::{
    idempotency,
    tenants::Permission,
    tokens::{self, Scope, TokenError},
    webhooks::{self, destination::EndpointUrl},
};
use secrecy::ExposeSecret as _;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{Caller, member_of_tenant, parse_id};
use crate::problem::{ApiError, rejection};
use crate::{
    routes::api::{
        idempotency::{create_once, key_of},
        schema::ErrorBody,
    },
    state::ServerState,
};

/// An API token as listed (never the token itself).
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenBody {
    pub id: Uuid,
    pub name: String,
    /// `read`, `write`, `integrations`.
    pub scopes: Vec<String>,
    /// The member it acts as.
    pub created_by: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// After this it is refused like a revoked one.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct NewTokenBody {
    /// 1 to 80 characters: what uses it.
    name: String,
    /// At least one of `read`, `write`, `integrations`.
    scopes: Vec<String>,
    /// RFC 3339, in the future, within 10 years; none: until revoked.
    #[serde(default, with = "time::serde::rfc3339::option")]
    expires_at: Option<OffsetDateTime>,
}

/// A new token: `token` appears in this answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedToken {
    pub id: Uuid,
    /// `a1t_…`: send as `Authorization: Bearer …`.
    pub token: String,
    pub scopes: Vec<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

/// Lists the tenant's API tokens, newest first.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/tokens", tag = "integrations",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "The tokens", body = Vec<TokenBody>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_tokens(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let list = tokens::list(&state.services.pool, tenant).await?;
    Ok(Json(
        list.into_iter()
            .map(|t| TokenBody {
                id: t.id,
                name: t.name,
                scopes: t.scopes,
                created_by: t.created_by,
                created_at: t.created_at,
                last_used_at: t.last_used_at,
                revoked_at: t.revoked_at,
                expires_at: t.expires_at,
            })
            .collect::<Vec<_>>(),
    ))
}

/// Makes an API token that acts as the caller's member in this tenant.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/tokens", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key creates nothing new and answers the original 201, secret included (for 15 minutes)"),
    ),
    request_body = NewTokenBody,
    responses(
        (status = 201, description = "Created; the token is shown this once", body = CreatedToken),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, the token lacks `integrations`, or asks for more than it has (`token_beyond_caller`)", body = ErrorBody),
        (status = 409, description = "The tenant has 100 live tokens (`too_many_tokens`), or the Idempotency-Key's first attempt still runs or its answer is no longer held", body = ErrorBody),
        (status = 422, description = "Bad name, scopes or expiry, or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn create_token(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
    body: Result<Json<NewTokenBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let key = key_of(&headers)?;
    let request = serde_json::to_vec(&body).map_err(|e| anyhow::anyhow!("encoding: {e}"))?;
    let scopes = body
        .scopes
        .iter()
        .map(|s| Scope::parse(s.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let parent = match &caller {
        Caller::Token(token) if !token.may_mint(&scopes, body.expires_at) => {
            return Err(TokenError::BeyondCaller.into());
        }
        Caller::Token(token) => Some(token.token),
        Caller::Session(_) => None,
    };
    let pool = state.services.pool.clone();
    create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "create_token",
        &request,
        |created: &CreatedToken| created.id,
        async move {
            let (id, token) = tokens::create(
                &pool,
                tenant,
                admin.id,
                &body.name,
                &scopes,
                body.expires_at,
                parent,
            )
            .await?;
            let mut names: Vec<String> = scopes.iter().map(|s| s.as_str().to_owned()).collect();
            names.sort_unstable();
            names.dedup();
            Ok(CreatedToken {
                id,
                token: token.expose_secret().to_owned(),
                scopes: names,
                expires_at: body.expires_at,
            })
        },
    )
    .await
}

/// Revokes a token at once, and every token it made; whatever uses them
/// stops working. Revoking twice changes nothing. A token may revoke only
/// itself and the tokens it made.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/tokens/{token_id}/revoke", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("token_id" = Uuid, Path, description = "The token"),
    ),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, the token lacks `integrations`, or it is not this token or one it made (`token_beyond_caller`)", body = ErrorBody),
        (status = 404, description = "No such token in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn revoke_token(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, token_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let token = parse_id(&token_id)?;
    // A token revokes itself and the tokens it made, never a sibling or
    // the token that made it.
    if let Caller::Token(caller) = &caller
        && !tokens::descends_from(&state.services.pool, tenant, token, caller.token).await?
    {
        return Err(TokenError::BeyondCaller.into());
    }
    tokens::revoke(&state.services.pool, tenant, admin.id, token).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A webhook endpoint as listed (never its secret).
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookBody {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Disabled endpoints get no more events, for good.
    #[serde(with = "time::serde::rfc3339::option")]
    pub disabled_at: Option<OffsetDateTime>,
    pub delivered: i64,
    /// Dead-lettered and not redelivered.
    pub dead: i64,
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct NewWebhookBody {
    /// `https://…` (or `http://`), at most 2,000 characters.
    url: String,
    /// At least one of `code.bound`, `code.unbound`, `code.revoked`,
    /// `code.replaced`, `code.transferred`, `code.leak_suspected`,
    /// `access.recorded`, `batch.issued`, `order.placed`, `order.refunded`.
    events: Vec<String>,
}

/// A new endpoint: `secret` signs its deliveries and appears in this
/// answer only.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedWebhook {
    pub id: Uuid,
    pub secret: String,
}

/// A delivery that needs a look: dead-lettered, or still retrying.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryBody {
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub url: String,
    pub event_type: String,
    /// Attempts since the delivery was last put back in line (a
    /// redelivery starts a fresh count).
    pub attempts: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub next_attempt_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub dead_at: Option<OffsetDateTime>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
}

/// Lists the tenant's webhook endpoints.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/webhooks", tag = "integrations",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "The endpoints", body = Vec<WebhookBody>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_webhooks(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let list = webhooks::endpoints::endpoints(&state.services.pool, tenant).await?;
    Ok(Json(list.into_iter().map(webhook_body).collect::<Vec<_>>()))
}

/// Adds a webhook endpoint for the named events.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/webhooks", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key creates nothing new and answers the original 201, secret included (for 15 minutes)"),
    ),
    request_body = NewWebhookBody,
    responses(
        (status = 201, description = "Created; the secret is shown this once", body = CreatedWebhook),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 409, description = "The Idempotency-Key's first attempt still runs, or its answer is no longer held", body = ErrorBody),
        (status = 422, description = "Bad URL or events, or the Idempotency-Key was used for another request", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn create_webhook(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
    headers: HeaderMap,
    body: Result<Json<NewWebhookBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let key = key_of(&headers)?;
    let request = serde_json::to_vec(&body).map_err(|e| anyhow::anyhow!("encoding: {e}"))?;
    let url = EndpointUrl::parse(&body.url)?;
    let events = webhooks::parse_events(body.events.iter().map(String::as_str))?;
    let pool = state.services.pool.clone();
    create_once(
        &state,
        key,
        &caller.login(),
        idempotency::Scope {
            tenant,
            actor: admin.id,
        },
        "create_webhook",
        &request,
        |created: &CreatedWebhook| created.id,
        async move {
            let (id, secret) =
                webhooks::endpoints::create_endpoint(&pool, tenant, admin.id, &url, &events)
                    .await?;
            Ok(CreatedWebhook {
                id,
                secret: secret.expose_secret().to_owned(),
            })
        },
    )
    .await
}

fn webhook_body(e: webhooks::endpoints::Endpoint) -> WebhookBody {
    WebhookBody {
        id: e.id,
        url: e.url,
        events: e.events,
        created_at: e.created_at,
        disabled_at: e.disabled_at,
        delivered: e.delivered,
        dead: e.dead,
    }
}

/// Reads one webhook endpoint (never its secret).
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("endpoint_id" = Uuid, Path, description = "The endpoint"),
    ),
    responses(
        (status = 200, description = "The endpoint", body = WebhookBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such endpoint in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn get_webhook(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, endpoint_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let endpoint = parse_id(&endpoint_id)?;
    let found = webhooks::endpoints::endpoint(&state.services.pool, tenant, endpoint)
        .await?
        .ok_or(webhooks::WebhookError::EndpointNotFound)?;
    Ok(Json(webhook_body(found)))
}

/// Changes an endpoint's URL and events (its secret stays; a disabled
/// endpoint stays disabled). Deliveries not yet made go to the new URL.
#[utoipa::path(put, path = "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("endpoint_id" = Uuid, Path, description = "The endpoint"),
    ),
    request_body = NewWebhookBody,
    responses(
        (status = 200, description = "Changed", body = WebhookBody),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such endpoint in this tenant", body = ErrorBody),
        (status = 422, description = "Bad URL or events (nothing changes)", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn update_webhook(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, endpoint_id)): Path<(String, String)>,
    body: Result<Json<NewWebhookBody>, JsonRejection>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let endpoint = parse_id(&endpoint_id)?;
    let Json(body) = body.map_err(|e| rejection(e, "invalid_json"))?;
    let url = EndpointUrl::parse(&body.url)?;
    let events = webhooks::parse_events(body.events.iter().map(String::as_str))?;
    let pool = &state.services.pool;
    let lease = crate::relay::lease_of(&state.settings.webhooks);
    webhooks::endpoints::update_endpoint(pool, tenant, admin.id, endpoint, &url, &events, lease)
        .await?;
    let changed = webhooks::endpoints::endpoint(pool, tenant, endpoint)
        .await?
        .ok_or(webhooks::WebhookError::EndpointNotFound)?;
    Ok(Json(webhook_body(changed)))
}

/// Disables an endpoint for good: it gets no more events and its pending
/// deliveries are dead-lettered.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}/disable", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("endpoint_id" = Uuid, Path, description = "The endpoint"),
    ),
    responses(
        (status = 204, description = "Disabled"),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such endpoint in this tenant", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn disable_webhook(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, endpoint_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let endpoint = parse_id(&endpoint_id)?;
    webhooks::endpoints::disable_endpoint(&state.services.pool, tenant, admin.id, endpoint).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lists the deliveries that need a look: dead-lettered ones and those
/// still retrying, oldest event first.
#[utoipa::path(get, path = "/api/v1/tenants/{tenant_id}/webhooks/deliveries", tag = "integrations",
    params(("tenant_id" = Uuid, Path, description = "The tenant")),
    responses(
        (status = 200, description = "The deliveries", body = Vec<DeliveryBody>),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn list_deliveries(
    State(state): State<ServerState>,
    caller: Caller,
    Path(tenant_id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, _) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let list = webhooks::endpoints::troubled(&state.services.pool, tenant, 200).await?;
    Ok(Json(
        list.into_iter()
            .map(|d| DeliveryBody {
                endpoint_id: d.endpoint_id,
                event_id: d.event_id,
                url: d.url,
                event_type: d.event_type,
                attempts: d.attempts,
                created_at: d.created_at,
                next_attempt_at: d.next_attempt_at,
                dead_at: d.dead_at,
                last_status: d.last_status,
                last_error: d.last_error,
            })
            .collect::<Vec<_>>(),
    ))
}

/// Sends a dead-lettered delivery again, with fresh attempts.
#[utoipa::path(post, path = "/api/v1/tenants/{tenant_id}/webhooks/{endpoint_id}/deliveries/{event_id}/redeliver", tag = "integrations",
    params(
        ("tenant_id" = Uuid, Path, description = "The tenant"),
        ("endpoint_id" = Uuid, Path, description = "The endpoint"),
        ("event_id" = Uuid, Path, description = "The event"),
    ),
    responses(
        (status = 204, description = "Queued again"),
        (status = 401, description = "Not signed in / unknown token", body = ErrorBody),
        (status = 403, description = "Not an owner of this tenant, or the token lacks `integrations`", body = ErrorBody),
        (status = 404, description = "No such dead-lettered delivery, or its endpoint is disabled", body = ErrorBody),
    ),
    security(("bearer" = []), ("session" = [])))]
pub async fn redeliver(
    State(state): State<ServerState>,
    caller: Caller,
    Path((tenant_id, endpoint_id, event_id)): Path<(String, String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (tenant, admin) =
        member_of_tenant(&state, &caller, &tenant_id, Permission::ManageIntegrations).await?;
    let (endpoint, event) = (parse_id(&endpoint_id)?, parse_id(&event_id)?);
    webhooks::endpoints::redeliver(&state.services.pool, tenant, admin.id, endpoint, event).await?;
    Ok(StatusCode::NO_CONTENT)
}
