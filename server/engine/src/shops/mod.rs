//! Shops: a tenant's Stripe, Lemon Squeezy, Shopify or Gumroad account,
//! whose own signed webhooks place and refund orders here.
//!
//! A creator connects a shop (an *integration*: the shop, the secret it
//! signs with, a URL `/hooks/shops/{tenant_id}/{id}` to give the shop), says which of
//! the shop's products is which share ([`map_product`]), and from then on
//! each paid sale issues and mails its codes ([`crate::orders::place`]),
//! and each refund or chargeback applies the share's refund policy
//! ([`crate::refunds::refund`]). A delivery is stored before anything is
//! done with it and marked with what came of it ([`intake`]): the
//! console's "Shop events" and the reason a refused one was refused.
//!
//! Nothing here counts issuances: the order's unique key `(tenant,
//! source, order_ref)` is what makes a shop's retries, and a hundred
//! copies of one delivery racing, issue one order.
//!
//! - [`verify`]: each shop's signature scheme (pure).
//! - [`events`]: what a delivery says (pure).
//! - [`intake`]: a delivery verified, stored, read and acted on.
//! - `products`: which product of a shop sells which share.

pub mod events;
pub mod intake;
mod products;
pub mod verify;

pub use products::{Course, Product, courses, map_product, products, unmap_product};

use anyhow::Context as _;
use rand::RngCore as _;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{accounts::AccountId, audit, tenants::TenantId};

/// A shop AdmitOne reads webhooks from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Stripe,
    LemonSqueezy,
    Shopify,
    Gumroad,
}

impl Provider {
    pub const ALL: [Self; 4] = [
        Self::Stripe,
        Self::LemonSqueezy,
        Self::Shopify,
        Self::Gumroad,
    ];

    pub fn parse(raw: &str) -> Result<Self, ShopError> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == raw.trim())
            .ok_or(ShopError::InvalidProvider)
    }

    /// Its name (a shop's orders' `source` starts with it:
    /// [`Integration::order_source`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stripe => "stripe",
            Self::LemonSqueezy => "lemonsqueezy",
            Self::Shopify => "shopify",
            Self::Gumroad => "gumroad",
        }
    }

    /// The request header its signature comes in (Gumroad: none, its
    /// secret is in the URL).
    pub fn signature_header(self) -> Option<&'static str> {
        match self {
            Self::Stripe => Some("stripe-signature"),
            Self::LemonSqueezy => Some("x-signature"),
            Self::Shopify => Some("x-shopify-hmac-sha256"),
            Self::Gumroad => None,
        }
    }
}

/// What refuses a change to a tenant's shops.
#[derive(Debug, thiserror::Error)]
pub enum ShopError {
    #[error("a shop is stripe, lemonsqueezy, shopify or gumroad")]
    InvalidProvider,
    #[error("a name is 1 to 80 characters")]
    InvalidName,
    #[error(
        "a signing secret is 16 to 512 visible characters, as the shop shows it (Stripe's starts with whsec_)"
    )]
    InvalidSecret,
    #[error(
        "this shop signs its webhooks with a secret it shows you: paste it here (only Gumroad's is drawn by AdmitOne)"
    )]
    SecretRequired,
    #[error("a product id is 1 to 200 visible characters")]
    InvalidProductRef,
    #[error("no such shop")]
    IntegrationNotFound,
    #[error("this shop has no such product")]
    ProductNotFound,
    #[error("no such share")]
    ShareNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// The address a shop sends its webhooks to, on the server's origin
/// (`scheme://host[:port]`, where the server answers
/// `POST /hooks/shops/{tenant_id}/{shop_id}`): the one spelling, for the
/// API's answer and the console's page. Gumroad's adds `?secret=…`, which
/// is answered once, when it is drawn.
pub fn webhook_url(origin: &str, tenant: TenantId, shop: Uuid) -> String {
    format!(
        "{}/hooks/shops/{}/{shop}",
        origin.trim_end_matches('/'),
        tenant.0
    )
}

/// The address to give a shop: [`webhook_url`], and for Gumroad, whose
/// pings carry no signature, the shop's secret in its query (`?secret=…`,
/// encoded), which only whoever just set or drew the secret may be shown.
pub fn webhook_address(
    origin: &str,
    tenant: TenantId,
    shop: Uuid,
    provider: Provider,
    secret: Option<&str>,
) -> String {
    let url = webhook_url(origin, tenant, shop);
    match (provider, secret.map(str::trim).filter(|s| !s.is_empty())) {
        (Provider::Gumroad, Some(secret)) => format!(
            "{url}?secret={}",
            url::form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>()
        ),
        _ => url,
    }
}

/// How long the secret before a rotation is still accepted.
pub const PREVIOUS_SECRET_GRACE: time::Duration = time::Duration::hours(24);

/// A connected shop, as the console lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integration {
    pub tenant: TenantId,
    pub id: Uuid,
    pub provider: Provider,
    pub name: String,
    /// The `source` of the orders it places (`stripe-1a2b3c4d`): its own,
    /// so its refunds reach its orders alone.
    pub order_source: String,
    /// Until when the secret before the last rotation is accepted.
    pub previous_until: Option<OffsetDateTime>,
    pub created_by: AccountId,
    pub created_at: OffsetDateTime,
    pub disabled_at: Option<OffsetDateTime>,
}

/// A shop just connected: the secret is answered this once when AdmitOne
/// drew it (Gumroad's, which goes in the ping's URL).
#[derive(Debug)]
pub struct Connected {
    pub integration: Integration,
    pub drawn_secret: Option<String>,
}

fn check_name(raw: &str) -> Result<String, ShopError> {
    let name = raw.trim();
    ((1..=80).contains(&name.chars().count()) && !name.chars().any(char::is_control))
        .then(|| name.to_owned())
        .ok_or(ShopError::InvalidName)
}

fn check_secret(raw: &str) -> Result<String, ShopError> {
    let secret = raw.trim();
    ((16..=512).contains(&secret.len()) && secret.chars().all(|c| c.is_ascii_graphic()))
        .then(|| secret.to_owned())
        .ok_or(ShopError::InvalidSecret)
}

fn draw_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Connects a shop. `secret`: the one the shop signs with (required but
/// for Gumroad, whose secret AdmitOne draws when none is given).
pub async fn connect(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    provider: Provider,
    name: &str,
    secret: Option<&str>,
) -> Result<Connected, ShopError> {
    let name = check_name(name)?;
    let (secret, drawn) = match (secret.map(str::trim).filter(|s| !s.is_empty()), provider) {
        (Some(given), _) => (check_secret(given)?, false),
        (None, Provider::Gumroad) => (draw_secret(), true),
        (None, _) => return Err(ShopError::SecretRequired),
    };
    let id = Uuid::new_v4();
    // The id's first 8 hex digits: unique in the tenant (the unique key
    // refuses the one-in-four-billion clash, which fails loudly).
    let order_source = format!("{}-{}", provider.as_str(), &id.simple().to_string()[..8]);
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let created_at = sqlx::query_scalar!(
        "INSERT INTO shop_integrations (tenant_id, id, provider, name, order_source, secret, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING created_at",
        tenant.0,
        id,
        provider.as_str(),
        name,
        order_source,
        secret,
        actor.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("connecting a shop")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "shop.connected",
        ("shop_integration", id),
        json!({ "provider": provider.as_str(), "name": name }),
    )
    .await?;
    tx.commit().await.context("committing a shop")?;
    Ok(Connected {
        integration: Integration {
            tenant,
            id,
            provider,
            name,
            order_source,
            previous_until: None,
            created_by: actor,
            created_at,
            disabled_at: None,
        },
        drawn_secret: drawn.then_some(secret),
    })
}

/// The tenant's shops, newest first.
pub async fn list(pool: &PgPool, tenant: TenantId) -> Result<Vec<Integration>, ShopError> {
    read(pool, tenant, None).await
}

async fn read(
    pool: &PgPool,
    tenant: TenantId,
    only: Option<Uuid>,
) -> Result<Vec<Integration>, ShopError> {
    let rows = sqlx::query!(
        "SELECT id, provider, name, order_source, previous_until, created_by, created_at, disabled_at
         FROM shop_integrations WHERE tenant_id = $1 AND ($2::uuid IS NULL OR id = $2)
         ORDER BY created_at DESC, id",
        tenant.0,
        only,
    )
    .fetch_all(pool)
    .await
    .context("listing shops")?;
    rows.into_iter()
        .map(|r| {
            Ok(Integration {
                tenant,
                id: r.id,
                provider: Provider::parse(&r.provider)
                    .map_err(|_| anyhow::anyhow!("a shop of an unknown provider {}", r.provider))?,
                name: r.name,
                order_source: r.order_source,
                previous_until: r.previous_until,
                created_by: AccountId(r.created_by),
                created_at: r.created_at,
                disabled_at: r.disabled_at,
            })
        })
        .collect()
}

/// One of the tenant's shops.
pub async fn get(pool: &PgPool, tenant: TenantId, id: Uuid) -> Result<Integration, ShopError> {
    read(pool, tenant, Some(id))
        .await?
        .into_iter()
        .find(|i| i.id == id)
        .ok_or(ShopError::IntegrationNotFound)
}

/// Replaces a shop's secret; the one before stays accepted for
/// [`PREVIOUS_SECRET_GRACE`] (deliveries the shop signed with it). For
/// Gumroad with no secret given, draws one and answers it.
pub async fn rotate_secret(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
    secret: Option<&str>,
) -> Result<Option<String>, ShopError> {
    let integration = get(pool, tenant, id).await?;
    let (secret, drawn) = match (
        secret.map(str::trim).filter(|s| !s.is_empty()),
        integration.provider,
    ) {
        (Some(given), _) => (check_secret(given)?, false),
        (None, Provider::Gumroad) => (draw_secret(), true),
        (None, _) => return Err(ShopError::SecretRequired),
    };
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let until = OffsetDateTime::now_utc() + PREVIOUS_SECRET_GRACE;
    let rotated = sqlx::query!(
        "UPDATE shop_integrations
         SET previous_secret = secret, previous_until = $3, secret = $4
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
        until,
        secret,
    )
    .execute(&mut *tx)
    .await
    .context("rotating a shop's secret")?;
    if rotated.rows_affected() == 0 {
        return Err(ShopError::IntegrationNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "shop.secret_rotated",
        ("shop_integration", id),
        json!({ "previous_accepted_until": until.unix_timestamp() }),
    )
    .await?;
    tx.commit().await.context("committing a rotation")?;
    Ok(drawn.then_some(secret))
}

/// Disables a shop: its deliveries are refused from now on (404, as an
/// unknown one's), and stay listed.
pub async fn disable(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    id: Uuid,
) -> Result<Integration, ShopError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let changed = sqlx::query!(
        "UPDATE shop_integrations SET disabled_at = coalesce(disabled_at, now())
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        id,
    )
    .execute(&mut *tx)
    .await
    .context("disabling a shop")?;
    if changed.rows_affected() == 0 {
        return Err(ShopError::IntegrationNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "shop.disabled",
        ("shop_integration", id),
        json!({}),
    )
    .await?;
    tx.commit().await.context("committing a disabled shop")?;
    get(pool, tenant, id).await
}

/// A delivery as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShopEvent {
    pub id: Uuid,
    pub received_at: OffsetDateTime,
    pub kind: Option<String>,
    pub event_ref: Option<String>,
    /// `received` (failed midway; the shop retries), `acted`, `ignored`
    /// or `refused`.
    pub outcome: String,
    pub reason: Option<String>,
    pub order_ids: Vec<Uuid>,
}

/// The deliveries refused for a missing or wrong signature (stored
/// without their body, at most [`intake::REFUSED_PER_MINUTE`] a minute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsigned {
    pub count: i64,
    pub latest: Option<OffsetDateTime>,
}

/// How many deliveries to shop `id` were refused for their signature
/// since `since`, and the latest one's time.
pub async fn unsigned_since(
    pool: &PgPool,
    tenant: TenantId,
    id: Uuid,
    since: OffsetDateTime,
) -> Result<Unsigned, ShopError> {
    let row = sqlx::query!(
        r#"SELECT count(*) AS "count!", max(received_at) AS latest
           FROM shop_events WHERE tenant_id = $1 AND integration_id = $2 AND received_at > $3
             AND outcome = 'refused' AND kind IS NULL AND octet_length(body) = 0"#,
        tenant.0,
        id,
        since,
    )
    .fetch_one(pool)
    .await
    .context("counting unsigned shop events")?;
    Ok(Unsigned {
        count: row.count,
        latest: row.latest,
    })
}

/// Which deliveries [`recent_events`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deliveries {
    All,
    /// Without the ones refused for their signature, which anyone can
    /// post: counted apart ([`unsigned_since`]), so that a flood of them
    /// never hides the shop's own.
    Signed,
}

/// A shop's latest deliveries, newest first (at most `limit`, 1 to 200).
pub async fn recent_events(
    pool: &PgPool,
    tenant: TenantId,
    id: Uuid,
    limit: i64,
    which: Deliveries,
) -> Result<Vec<ShopEvent>, ShopError> {
    get(pool, tenant, id).await?;
    let rows = sqlx::query_as!(
        ShopEvent,
        "SELECT id, received_at, kind, event_ref, outcome, reason, order_ids
         FROM shop_events WHERE tenant_id = $1 AND integration_id = $2
           AND NOT ($4 AND outcome = 'refused' AND kind IS NULL AND octet_length(body) = 0)
         ORDER BY received_at DESC, id DESC LIMIT $3",
        tenant.0,
        id,
        limit.clamp(1, 200),
        which == Deliveries::Signed,
    )
    .fetch_all(pool)
    .await
    .context("listing shop events")?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gumroads_address_carries_its_secret_encoded() {
        let (tenant, shop) = (TenantId(Uuid::nil()), Uuid::max());
        let plain = webhook_url("https://a.example/", tenant, shop);
        assert_eq!(
            plain,
            format!("https://a.example/hooks/shops/{}/{shop}", tenant.0)
        );
        let secret = "a&b=c#d+e%f/g?h";
        let given = webhook_address(
            "https://a.example",
            tenant,
            shop,
            Provider::Gumroad,
            Some(secret),
        );
        let parsed = url::Url::parse(&given).expect("a URL");
        assert_eq!(parsed.path(), format!("/hooks/shops/{}/{shop}", tenant.0));
        assert_eq!(parsed.fragment(), None, "{given}");
        let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        assert_eq!(pairs, [("secret".to_owned(), secret.to_owned())], "{given}");
        for provider in [Provider::Stripe, Provider::LemonSqueezy, Provider::Shopify] {
            assert_eq!(
                webhook_address("https://a.example", tenant, shop, provider, Some(secret)),
                plain
            );
        }
        for none in [None, Some(""), Some("  ")] {
            assert_eq!(
                webhook_address("https://a.example", tenant, shop, Provider::Gumroad, none),
                plain
            );
        }
    }
}
