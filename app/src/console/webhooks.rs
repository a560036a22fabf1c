//! The tenant's webhooks (`/admin/t/{tenant}/webhooks`, the page in
//! `pages/console/webhooks.rs`): endpoints, troubled deliveries, and adding,
//! disabling and redelivering.

#[cfg(feature = "ssr")]
use crate::i18n::Msg;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// A webhook endpoint as the console lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookRow {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub created: String,
    pub disabled: Option<String>,
    pub delivered: i64,
    pub dead: i64,
}

/// A delivery that needs a look: retrying, or dead-lettered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub url: String,
    pub event_type: String,
    pub attempts: i32,
    pub happened: String,
    /// Dead-lettered: waits for "redeliver".
    pub dead: bool,
    pub next_attempt: String,
    pub last_error: Option<String>,
}

/// The webhooks page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub endpoints: Vec<WebhookRow>,
    pub deliveries: Vec<DeliveryRow>,
}

/// A new endpoint and its signing secret, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewWebhook {
    pub id: Uuid,
    pub secret: String,
}

#[cfg(feature = "ssr")]
fn webhook_error(error: engine::webhooks::WebhookError) -> AppError {
    AppError::outcome(error)
}

/// The tenant's webhook endpoints and its troubled deliveries.
#[server(prefix = "/api/admin", endpoint = "webhooks", input = server_fn::codec::GetUrl)]
pub async fn webhooks(tenant_id: Uuid) -> Result<WebhooksView, AppError> {
    use support::internal;
    let (state, tenant, _) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let zone = support::zone(&state, tenant).await?;
    let endpoints = engine::webhooks::endpoints::endpoints(&state.pool, tenant)
        .await
        .map_err(internal)?;
    let deliveries = engine::webhooks::endpoints::troubled(&state.pool, tenant, 200)
        .await
        .map_err(internal)?;
    Ok(WebhooksView {
        endpoints: endpoints
            .into_iter()
            .map(|e| WebhookRow {
                id: e.id,
                url: e.url,
                events: e.events,
                created: zone.when(e.created_at),
                disabled: e.disabled_at.map(|at| zone.when(at)),
                delivered: e.delivered,
                dead: e.dead,
            })
            .collect(),
        deliveries: deliveries
            .into_iter()
            .map(|d| DeliveryRow {
                endpoint_id: d.endpoint_id,
                event_id: d.event_id,
                url: d.url,
                event_type: d.event_type,
                attempts: d.attempts,
                happened: zone.when(d.created_at),
                dead: d.dead_at.is_some(),
                next_attempt: zone.when(d.next_attempt_at),
                last_error: d.last_error,
            })
            .collect(),
    })
}

pub use create_form::{CreateWebhook, create_webhook};

/// The endpoint form: one argument per event the endpoint may tick.
mod create_form {
    #![expect(clippy::too_many_arguments, reason = "one argument per form field")]
    use super::*;

    /// Adds a webhook endpoint for the ticked events; the answer holds its
    /// signing secret, shown this once.
    #[server(prefix = "/api/admin", endpoint = "webhooks/create")]
    pub async fn create_webhook(
        tenant_id: Uuid,
        url: String,
        code_bound: Option<String>,
        code_unbound: Option<String>,
        code_revoked: Option<String>,
        code_replaced: Option<String>,
        code_transferred: Option<String>,
        code_leak_suspected: Option<String>,
        access_recorded: Option<String>,
        batch_issued: Option<String>,
        order_placed: Option<String>,
        order_refunded: Option<String>,
    ) -> Result<NewWebhook, AppError> {
        use secrecy::ExposeSecret as _;
        let (state, tenant, admin) =
            support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
                .await?;
        let url = engine::webhooks::destination::EndpointUrl::parse(&url).map_err(webhook_error)?;
        let ticked = [
            ("code.bound", &code_bound),
            ("code.unbound", &code_unbound),
            ("code.revoked", &code_revoked),
            ("code.replaced", &code_replaced),
            ("code.transferred", &code_transferred),
            ("code.leak_suspected", &code_leak_suspected),
            ("access.recorded", &access_recorded),
            ("batch.issued", &batch_issued),
            ("order.placed", &order_placed),
            ("order.refunded", &order_refunded),
        ];
        let events = engine::webhooks::parse_events(
            ticked
                .iter()
                .filter(|(_, on)| on.is_some())
                .map(|(event, _)| *event),
        )
        .map_err(webhook_error)?;
        let (id, secret) = engine::webhooks::endpoints::create_endpoint(
            &state.pool,
            tenant,
            admin.id,
            &url,
            &events,
        )
        .await
        .map_err(webhook_error)?;
        let secret = secret.expose_secret().to_owned();
        // Without JavaScript the secret travels to the next page.
        support::say_on_next_page(crate::i18n::lang().format(
            Msg::EndpointAddedItsSigningSecretShown,
            &[("secret", &secret)],
        ))
        .await?;
        Ok(NewWebhook { id, secret })
    }
}

/// Stops an endpoint; its pending deliveries are dead-lettered.
#[server(prefix = "/api/admin", endpoint = "webhooks/disable")]
pub async fn disable_webhook(
    tenant_id: Uuid,
    endpoint_id: Uuid,
    confirm: Option<String>,
) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    support::confirmed(
        confirm.as_deref(),
        crate::i18n::Msg::ConfirmEndpointGetsNoEvents,
    )?;
    engine::webhooks::endpoints::disable_endpoint(&state.pool, tenant, admin.id, endpoint_id)
        .await
        .map_err(webhook_error)
}

/// Sends a dead-lettered delivery again, with fresh attempts.
#[server(prefix = "/api/admin", endpoint = "webhooks/redeliver")]
pub async fn redeliver(tenant_id: Uuid, endpoint_id: Uuid, event_id: Uuid) -> Result<(), AppError> {
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    engine::webhooks::endpoints::redeliver(&state.pool, tenant, admin.id, endpoint_id, event_id)
        .await
        .map_err(webhook_error)
}
