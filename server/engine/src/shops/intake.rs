//! A shop's delivery, from the request to what came of it.
//!
//! 1. The shop is found by its tenant and id in the URL; an unknown or disabled one
//!    is answered 404 and nothing is stored (there is no tenant to store
//!    it under).
//! 2. The signature is checked ([`super::verify`]).
//! 3. The delivery is stored (`shop_events`) before anything is done
//!    with it: a verified one whole, a refused one's first 4 KiB (anyone
//!    can post to the URL; the console still shows what came and why it
//!    was refused).
//! 4. It is read ([`super::events`]) and acted on: a sale places an order
//!    per mapped product ([`orders::place`], as the integration's creator),
//!    a refund or a chargeback refunds the orders it names
//!    ([`refunds::refund`]), anything else is ignored.
//! 5. The stored delivery is marked `acted`, `ignored` or `refused` with
//!    the reason and the orders.
//!
//! A crash between 3 and 5 leaves it `received`; the shop, answered no
//! 2xx, delivers it again, and acting again is harmless: the orders' and
//! refunds' unique keys answer a repeat with what the first did.

use anyhow::Context as _;
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    Provider,
    events::{self, Event, Headers, Unreadable},
    verify::{self, Proof, Unverified},
};
use crate::{
    accounts::{AccountId, Email},
    codes::Keyring,
    orders::{self, OrderError, OrderRef, OrderRequest, OrderSource, Placed},
    refunds::{self, RefundError, RefundRequest},
    shares::ShareId,
    tenants::TenantId,
};

/// The most of a delivery's body a shop may send (a Shopify order with
/// many line items stays far below it).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// How much of a refused delivery's body is kept.
const REFUSED_BODY_BYTES: usize = 4 * 1024;

/// A delivery as it came.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The shop's tenant and id, from the URL.
    pub tenant: TenantId,
    pub integration: Uuid,
    /// The request's headers (names in lower case, as HTTP/2 and axum
    /// give them); which ones count is each shop's ([`Provider`]).
    pub headers: &'a [(&'a str, &'a str)],
    /// Gumroad's `secret` URL parameter.
    pub url_secret: Option<&'a str>,
    pub body: &'a [u8],
}

impl Delivery<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| *value)
    }
}

/// What a delivery that was believed and read came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// The stored delivery.
    pub event: Uuid,
    /// Whether it placed or refunded orders (`false`: ignored, and why).
    pub acted: bool,
    pub reason: Option<String>,
    pub orders: Vec<Uuid>,
}

/// Why a delivery was refused (every one but [`Self::NotFound`] and
/// [`Self::Unexpected`] is stored as `refused` with this reason).
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    #[error("no such shop (or it was disabled)")]
    NotFound,
    #[error("{0}")]
    Unverified(Unverified),
    #[error("the delivery cannot be read: {0}")]
    Unreadable(Unreadable),
    #[error(
        "no product of this sale is connected to a course: connect it (Integrations → Shops); the shop's next retry then issues the codes"
    )]
    UnknownProduct,
    #[error("the order was refused: {0}")]
    Order(OrderError),
    #[error("the refund was refused: {0}")]
    Refund(RefundError),
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

struct Shop {
    tenant: TenantId,
    id: Uuid,
    provider: Provider,
    owner: AccountId,
}

/// Receives one delivery; `now` in unix seconds (Stripe's window).
pub async fn receive(
    pool: &PgPool,
    keyring: &Keyring,
    delivery: &Delivery<'_>,
    now: i64,
) -> Result<Decided, DeliveryError> {
    let row = sqlx::query!(
        "SELECT provider, created_by, secret,
                CASE WHEN previous_until > now() THEN previous_secret END AS previous_secret
         FROM shop_integrations
         WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NULL",
        delivery.tenant.0,
        delivery.integration,
    )
    .fetch_optional(pool)
    .await
    .context("finding a shop")?
    .ok_or(DeliveryError::NotFound)?;
    let shop = Shop {
        tenant: delivery.tenant,
        id: delivery.integration,
        provider: Provider::parse(&row.provider)
            .map_err(|_| anyhow::anyhow!("a shop of an unknown provider {}", row.provider))?,
        owner: AccountId(row.created_by),
    };
    let mut secrets = vec![row.secret.as_str()];
    secrets.extend(row.previous_secret.as_deref());
    let proof = Proof {
        signature: shop
            .provider
            .signature_header()
            .and_then(|name| delivery.header(name)),
        url_secret: delivery.url_secret,
        body: delivery.body,
    };
    if let Err(unverified) = verify::verify(shop.provider, &secrets, &proof, now) {
        let error = DeliveryError::Unverified(unverified);
        store_refused(pool, &shop, delivery, &error).await?;
        return Err(error);
    }
    let headers = Headers {
        topic: delivery.header("x-shopify-topic"),
        event_id: delivery
            .header("x-shopify-event-id")
            .or_else(|| delivery.header("x-shopify-webhook-id")),
    };
    let read = events::read(shop.provider, headers, delivery.body);
    let event = store(pool, &shop, delivery, read.as_ref().ok()).await?;
    let decided = match read {
        Err(unreadable) => Err(DeliveryError::Unreadable(unreadable)),
        Ok(read) => act(pool, keyring, &shop, event, read.event).await,
    };
    match &decided {
        Ok(decided) => {
            let outcome = if decided.acted { "acted" } else { "ignored" };
            mark(
                pool,
                &shop,
                event,
                outcome,
                decided.reason.as_deref(),
                &decided.orders,
            )
            .await?;
        }
        // Left `received`: the shop retries, and the retry acts.
        Err(DeliveryError::Unexpected(_)) => {}
        Err(refusal) => {
            mark(
                pool,
                &shop,
                event,
                "refused",
                Some(&refusal.to_string()),
                &[],
            )
            .await?
        }
    }
    decided
}

async fn act(
    pool: &PgPool,
    keyring: &Keyring,
    shop: &Shop,
    event: Uuid,
    what: Event,
) -> Result<Decided, DeliveryError> {
    let source = OrderSource::parse(shop.provider.as_str()).map_err(DeliveryError::Order)?;
    match what {
        Event::Ignored(why) => Ok(Decided {
            event,
            acted: false,
            reason: Some(why.to_owned()),
            orders: Vec::new(),
        }),
        Event::Paid { email, sales } => {
            let buyer =
                Email::parse(&email).map_err(|_| DeliveryError::Order(OrderError::InvalidEmail))?;
            let mut orders = Vec::new();
            let mut replays = 0;
            for sale in sales {
                let Some(share) = share_of(pool, shop, &sale.product_ref).await? else {
                    continue;
                };
                let request = OrderRequest {
                    share,
                    source: source.clone(),
                    order_ref: OrderRef::parse(&sale.order_ref).map_err(DeliveryError::Order)?,
                    buyer: buyer.clone(),
                    quantity: sale.quantity,
                    addressed: None,
                    mail: true,
                    lang: None,
                };
                let placed = orders::place(pool, keyring, shop.tenant, shop.owner, &request)
                    .await
                    .map_err(|e| match e {
                        OrderError::Unexpected(e) => DeliveryError::Unexpected(e),
                        e => DeliveryError::Order(e),
                    })?;
                replays += usize::from(matches!(placed, Placed::Replayed(_)));
                orders.push(placed.order().id);
            }
            if orders.is_empty() {
                return Err(DeliveryError::UnknownProduct);
            }
            Ok(Decided {
                event,
                acted: true,
                reason: (replays == orders.len()).then(|| {
                    "a repeat: the order was placed before, nothing issued again".to_owned()
                }),
                orders,
            })
        }
        Event::Refunded { kind, order_refs } => {
            let reason = format!("refunded in {}", shop.provider.as_str());
            let mut orders = Vec::new();
            for order_ref in order_refs {
                let order_ref = OrderRef::parse(&order_ref).map_err(DeliveryError::Order)?;
                let request = RefundRequest {
                    source: &source,
                    order_ref: &order_ref,
                    kind,
                    reason: Some(&reason),
                };
                match refunds::refund(pool, shop.tenant, shop.owner, &request).await {
                    Ok(refunded) => orders.push(refunded.refund().order_id),
                    // A sale of a product never connected placed nothing.
                    Err(RefundError::OrderNotFound) => {}
                    Err(RefundError::Unexpected(e)) => return Err(DeliveryError::Unexpected(e)),
                    Err(e) => return Err(DeliveryError::Refund(e)),
                }
            }
            let acted = !orders.is_empty();
            Ok(Decided {
                event,
                acted,
                reason: (!acted)
                    .then(|| "no order here for this refund (its sale placed none)".to_owned()),
                orders,
            })
        }
    }
}

async fn share_of(pool: &PgPool, shop: &Shop, product: &str) -> anyhow::Result<Option<ShareId>> {
    let share = sqlx::query_scalar!(
        "SELECT share_id FROM shop_products
         WHERE tenant_id = $1 AND integration_id = $2 AND product_ref = $3",
        shop.tenant.0,
        shop.id,
        product,
    )
    .fetch_optional(pool)
    .await
    .context("finding a product's share")?;
    Ok(share.map(ShareId))
}

async fn store(
    pool: &PgPool,
    shop: &Shop,
    delivery: &Delivery<'_>,
    read: Option<&events::Read>,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO shop_events (tenant_id, id, integration_id, kind, event_ref, body)
         VALUES ($1, $2, $3, $4, $5, $6)",
        shop.tenant.0,
        id,
        shop.id,
        read.and_then(|r| r.kind.as_deref()).map(|k| clip(k, 100)),
        read.and_then(|r| r.event_ref.as_deref())
            .map(|r| clip(r, 200)),
        delivery.body,
    )
    .execute(pool)
    .await
    .context("storing a shop's delivery")?;
    Ok(id)
}

async fn store_refused(
    pool: &PgPool,
    shop: &Shop,
    delivery: &Delivery<'_>,
    error: &DeliveryError,
) -> anyhow::Result<()> {
    let kept = &delivery.body[..delivery.body.len().min(REFUSED_BODY_BYTES)];
    let reason = error.to_string();
    sqlx::query!(
        "INSERT INTO shop_events (tenant_id, id, integration_id, body, body_truncated,
                                  outcome, reason, decided_at)
         VALUES ($1, $2, $3, $4, $5, 'refused', $6, now())",
        shop.tenant.0,
        Uuid::now_v7(),
        shop.id,
        kept,
        kept.len() < delivery.body.len(),
        clip(&reason, 500),
    )
    .execute(pool)
    .await
    .context("storing a refused delivery")?;
    Ok(())
}

async fn mark(
    pool: &PgPool,
    shop: &Shop,
    event: Uuid,
    outcome: &str,
    reason: Option<&str>,
    orders: &[Uuid],
) -> anyhow::Result<()> {
    sqlx::query!(
        "UPDATE shop_events SET outcome = $3, reason = $4, order_ids = $5, decided_at = now()
         WHERE tenant_id = $1 AND id = $2",
        shop.tenant.0,
        event,
        outcome,
        reason.map(|r| clip(r, 500)),
        orders,
    )
    .execute(pool)
    .await
    .context("marking a shop's delivery")?;
    Ok(())
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(at, _)| &text[..at])
}
