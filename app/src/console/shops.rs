//! The tenant's shops (`/admin/t/{tenant}/shops`, the page in
//! `pages/console/shops.rs`): each connected shop, the address its
//! webhooks go to, which of its products is which course, and its latest
//! deliveries with what came of each: acted on, ignored, refused and why
//! (`engine::shops`). Shops are connected, mapped and rotated through the
//! API (`/api/v1/tenants/{tenant}/shops`).

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[cfg(feature = "ssr")]
use super::support;

use crate::error::AppError;

/// Deliveries a shop's card lists.
pub const EVENTS_SHOWN: i64 = 50;

/// The shops page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopsView {
    pub shops: Vec<ShopRow>,
}

/// One shop, its products and its latest deliveries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopRow {
    pub id: Uuid,
    /// `stripe`, `lemonsqueezy`, `shopify` or `gumroad`.
    pub provider: String,
    pub name: String,
    /// Where the shop sends its webhooks (without a Gumroad secret).
    pub webhook_url: String,
    /// The shop's address carries a secret (Gumroad's `?secret=…`), shown
    /// only when it was drawn: this page cannot show it.
    pub secret_in_url: bool,
    pub created: String,
    pub disabled: Option<String>,
    pub products: Vec<ProductRow>,
    /// The latest signed deliveries.
    pub events: Vec<ShopEventRow>,
    /// Deliveries refused for their signature in the last day (anyone can
    /// post to the address), counted apart, and the latest one's time.
    pub unsigned_last_day: i64,
    pub unsigned_latest: Option<String>,
}

/// A product of the shop and the course it sells.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductRow {
    pub product_ref: String,
    pub share: Uuid,
    pub course: String,
}

/// One delivery and what came of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopEventRow {
    pub id: Uuid,
    pub received: String,
    pub kind: Option<String>,
    pub event_ref: Option<String>,
    /// `received`, `acted`, `ignored` or `refused`.
    pub outcome: String,
    pub reason: Option<String>,
    pub orders: usize,
}

/// The tenant's shops, each with its products and latest deliveries.
#[server(prefix = "/api/admin", endpoint = "shops", input = server_fn::codec::GetUrl)]
pub async fn shops(tenant_id: Uuid) -> Result<ShopsView, AppError> {
    let (state, tenant, _) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let zone = support::zone(&state, tenant).await?;
    let mut rows = Vec::new();
    for shop in engine::shops::list(&state.pool, tenant)
        .await
        .map_err(AppError::outcome)?
    {
        let products = engine::shops::products(&state.pool, tenant, shop.id)
            .await
            .map_err(AppError::outcome)?
            .into_iter()
            .map(|p| ProductRow {
                course: p.title,
                share: p.share.0,
                product_ref: p.product_ref,
            })
            .collect();
        let events = engine::shops::recent_events(
            &state.pool,
            tenant,
            shop.id,
            EVENTS_SHOWN,
            engine::shops::Deliveries::Signed,
        )
        .await
        .map_err(AppError::outcome)?
        .into_iter()
        .map(|e| ShopEventRow {
            id: e.id,
            received: zone.when(e.received_at),
            kind: e.kind,
            event_ref: e.event_ref,
            outcome: e.outcome,
            reason: e.reason,
            orders: e.order_ids.len(),
        })
        .collect();
        let unsigned = engine::shops::unsigned_since(
            &state.pool,
            tenant,
            shop.id,
            time::OffsetDateTime::now_utc() - time::Duration::days(1),
        )
        .await
        .map_err(AppError::outcome)?;
        rows.push(ShopRow {
            unsigned_last_day: unsigned.count,
            unsigned_latest: unsigned.latest.map(|at| zone.when(at)),
            webhook_url: engine::shops::webhook_url(&state.public_origin, tenant, shop.id),
            id: shop.id,
            secret_in_url: shop.provider == engine::shops::Provider::Gumroad,
            provider: shop.provider.as_str().to_owned(),
            name: shop.name,
            created: zone.when(shop.created_at),
            disabled: shop.disabled_at.map(|at| zone.when(at)),
            products,
            events,
        });
    }
    Ok(ShopsView { shops: rows })
}
