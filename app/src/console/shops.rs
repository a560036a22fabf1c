//! The tenant's shops (`/admin/t/{tenant}/shops`, the page in
//! `pages/console/shops.rs`): each connected shop, the address its
//! webhooks go to, which of its products is which course, and its latest
//! deliveries with what came of each: acted on, ignored, refused and why
//! (`engine::shops`); and the forms that connect a shop, map and forget its
//! products, replace its secret and disable it, as the API
//! (`/api/v1/tenants/{tenant}/shops`) does.

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
    /// The courses a product can be mapped to, by title.
    pub courses: Vec<CourseOption>,
}

/// A course a product can sell, as the mapping form lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CourseOption {
    pub share: Uuid,
    pub title: String,
    pub slug: String,
    pub status: model::ShareStatus,
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
    /// only once, when it is set or drawn: the card's address lacks it.
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
    let courses = engine::shops::courses(&state.pool, tenant)
        .await
        .map_err(AppError::outcome)?
        .into_iter()
        .map(|c| CourseOption {
            share: c.share.0,
            title: c.title,
            slug: c.slug,
            status: c.status,
        })
        .collect();
    Ok(ShopsView {
        shops: rows,
        courses,
    })
}

/// A shop just connected or its secret replaced: the address to give the
/// shop. A Gumroad shop's carries its secret (`?secret=…`), drawn or
/// typed, and is shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopAddress {
    pub shop: Uuid,
    pub webhook_url: String,
    /// The address holds the shop's secret (Gumroad's).
    pub holds_secret: bool,
}

/// The answer to a change of a shop, for the card it was made in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShopChanged {
    pub shop: Uuid,
}

// A shop's changes need `ManageIntegrations` here; the API also asks a
// token for `write` (`ManageCourses`), which every role allowed
// `ManageIntegrations` holds (`model::Role`'s tests pin it).

#[cfg(feature = "ssr")]
fn address(
    state: &crate::state::Services,
    shop: &engine::shops::Integration,
    secret: Option<&str>,
) -> ShopAddress {
    let plain = engine::shops::webhook_url(&state.public_origin, shop.tenant, shop.id);
    let webhook_url = engine::shops::webhook_address(
        &state.public_origin,
        shop.tenant,
        shop.id,
        shop.provider,
        secret,
    );
    ShopAddress {
        shop: shop.id,
        holds_secret: webhook_url != plain,
        webhook_url,
    }
}

/// Connects a shop. `secret` is the one the shop signs with; Gumroad's is
/// drawn when none is given, and the answer's address carries it.
#[server(prefix = "/api/admin", endpoint = "shops/connect")]
pub async fn connect_shop(
    tenant_id: Uuid,
    provider: String,
    name: String,
    secret: Option<String>,
) -> Result<ShopAddress, AppError> {
    use crate::i18n::{Msg, lang};
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let provider = engine::shops::Provider::parse(&provider).map_err(AppError::outcome)?;
    let done = engine::shops::connect(
        &state.pool,
        tenant,
        admin.id,
        provider,
        &name,
        secret.as_deref(),
    )
    .await
    .map_err(AppError::outcome)?;
    let answer = address(
        &state,
        &done.integration,
        done.drawn_secret.as_deref().or(secret.as_deref()),
    );
    let said = if answer.holds_secret {
        Msg::ShopConnectedWithSecret
    } else {
        Msg::ShopConnected
    };
    support::say_on_next_page(lang().format(said, &[("url", &answer.webhook_url)])).await?;
    Ok(answer)
}

/// Replaces a shop's signing secret (the one before stays accepted for a
/// day); Gumroad's is drawn when none is given.
#[server(prefix = "/api/admin", endpoint = "shops/secret")]
pub async fn rotate_shop_secret(
    tenant_id: Uuid,
    shop_id: Uuid,
    secret: Option<String>,
) -> Result<ShopAddress, AppError> {
    use crate::i18n::{Msg, lang};
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let drawn =
        engine::shops::rotate_secret(&state.pool, tenant, admin.id, shop_id, secret.as_deref())
            .await
            .map_err(AppError::outcome)?;
    let shop = engine::shops::get(&state.pool, tenant, shop_id)
        .await
        .map_err(AppError::outcome)?;
    let answer = address(&state, &shop, drawn.as_deref().or(secret.as_deref()));
    let said = if answer.holds_secret {
        Msg::ShopSecretInAddress
    } else {
        Msg::ShopSecretReplaced
    };
    support::say_on_next_page(lang().format(said, &[("url", &answer.webhook_url)])).await?;
    Ok(answer)
}

/// Disables a shop: its deliveries are refused from now on.
#[server(prefix = "/api/admin", endpoint = "shops/disable")]
pub async fn disable_shop(
    tenant_id: Uuid,
    shop_id: Uuid,
    confirm: Option<String>,
) -> Result<ShopChanged, AppError> {
    use crate::i18n::{Msg, t};
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    support::confirmed(confirm.as_deref(), Msg::ConfirmShopRefusesDeliveries)?;
    engine::shops::disable(&state.pool, tenant, admin.id, shop_id)
        .await
        .map_err(AppError::outcome)?;
    support::say_on_next_page(t(Msg::ShopDisabledNow).to_owned()).await?;
    Ok(ShopChanged { shop: shop_id })
}

/// Says which course a product of the shop sells (later sales only).
/// `share_id` is the course chosen (empty: none was).
#[server(prefix = "/api/admin", endpoint = "shops/products/map")]
pub async fn map_shop_product(
    tenant_id: Uuid,
    shop_id: Uuid,
    product: String,
    share_id: String,
) -> Result<ShopChanged, AppError> {
    use crate::i18n::{Msg, lang, t};
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    let share = share_id
        .trim()
        .parse::<Uuid>()
        .map_err(|_| AppError::invalid("share_id", t(Msg::ShopChooseCourse)))?;
    let mapped = engine::shops::map_product(
        &state.pool,
        tenant,
        admin.id,
        shop_id,
        &product,
        engine::shares::ShareId(share),
    )
    .await
    .map_err(AppError::outcome)?;
    support::say_on_next_page(lang().format(
        Msg::ShopProductMapped,
        &[("product", &mapped.product_ref), ("course", &mapped.title)],
    ))
    .await?;
    Ok(ShopChanged { shop: shop_id })
}

/// Forgets a product of the shop: its later sales are refused as unknown.
#[server(prefix = "/api/admin", endpoint = "shops/products/forget")]
pub async fn forget_shop_product(
    tenant_id: Uuid,
    shop_id: Uuid,
    product: String,
) -> Result<ShopChanged, AppError> {
    use crate::i18n::{Msg, lang};
    let (state, tenant, admin) =
        support::member_of_tenant(tenant_id, engine::tenants::Permission::ManageIntegrations)
            .await?;
    engine::shops::unmap_product(&state.pool, tenant, admin.id, shop_id, &product)
        .await
        .map_err(AppError::outcome)?;
    support::say_on_next_page(
        lang().format(Msg::ShopProductForgotten, &[("product", &product.trim())]),
    )
    .await?;
    Ok(ShopChanged { shop: shop_id })
}
