//! A shop's delivery, from the request to what came of it.
//!
//! 1. The shop is found by its tenant and id in the URL; an unknown or disabled one
//!    is answered 404 and nothing is stored (there is no tenant to store
//!    it under).
//! 2. The signature is checked ([`super::verify`]).
//! 3. The delivery is stored (`shop_events`) before anything is done
//!    with it. One whose signature failed is stored without its body
//!    (anyone can post to the URL), at most [`REFUSED_PER_MINUTE`] a
//!    minute per shop: the console still shows that it came and why it
//!    was refused.
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
    db::turns,
    orders::{self, OrderError, OrderRef, OrderRequest, OrderSource, Placed},
    refunds::{self, RefundError, RefundKind, RefundRequest},
    shares::ShareId,
    tenants::TenantId,
};

/// The most of a delivery's body a shop may send (a Shopify order with
/// many line items stays far below it).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// How many deliveries whose signature failed are stored a minute per
/// shop (the rest are refused alike and only counted in the log).
pub const REFUSED_PER_MINUTE: i64 = 60;

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
/// [`Self::Unexpected`] is stored as `refused` with this reason; one
/// whose signature failed, past [`REFUSED_PER_MINUTE`], is not).
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

impl DeliveryError {
    /// Nothing was decided (a failure, or other deliveries of the order
    /// held it too long): the delivery stays `received`, and the shop's
    /// retry acts on it.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Unexpected(_) | Self::Order(OrderError::Busy) | Self::Refund(RefundError::Busy)
        )
    }
}

struct Shop {
    tenant: TenantId,
    id: Uuid,
    provider: Provider,
    source: OrderSource,
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
        "SELECT provider, order_source, created_by, secret,
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
        source: OrderSource::parse(&row.order_source)
            .map_err(|_| anyhow::anyhow!("a shop's order source {:?}", row.order_source))?,
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
        store_refused(pool, &shop, &error).await?;
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
    let mut done = Vec::new();
    let decided = match read {
        Err(unreadable) => Err(DeliveryError::Unreadable(unreadable)),
        Ok(read) => act(pool, keyring, &shop, event, read.event, &mut done).await,
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
        Err(error) if error.is_transient() => {}
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
    done: &mut Vec<Uuid>,
) -> Result<Decided, DeliveryError> {
    let ignored = |why: &str| Decided {
        event,
        acted: false,
        reason: Some(why.to_owned()),
        orders: Vec::new(),
    };
    match what {
        Event::Ignored(why) => Ok(ignored(why)),
        Event::Paid { email, sales } => {
            let buyer =
                Email::parse(&email).map_err(|_| DeliveryError::Order(OrderError::InvalidEmail))?;
            let mut replays = 0;
            let mut refunded_early = false;
            for sale in sales {
                let Some(share) = share_of(pool, shop, &sale.product_ref).await? else {
                    continue;
                };
                let order_ref = OrderRef::parse(&sale.order_ref).map_err(DeliveryError::Order)?;
                let request = OrderRequest {
                    share,
                    source: shop.source.clone(),
                    order_ref: order_ref.clone(),
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
                done.push(placed.order().id);
                // A refund that came first is applied now (after the
                // order's commit: a refund committing meanwhile finds
                // the order itself).
                if let Some(kind) = early_refund(pool, shop, &order_ref).await? {
                    refund(pool, shop, &order_ref, kind).await?;
                    refunded_early = true;
                }
            }
            if done.is_empty() {
                // A store that sells other things too: an order with no
                // line of a course is none of AdmitOne's business.
                return match shop.provider {
                    Provider::Shopify => {
                        Ok(ignored("no line item of this order is a connected course"))
                    }
                    _ => Err(DeliveryError::UnknownProduct),
                };
            }
            let reason = if refunded_early {
                Some("refunded before it was placed: the share's refund policy was applied at once")
            } else if replays == done.len() {
                Some("a repeat: the order was placed before, nothing issued again")
            } else {
                None
            };
            Ok(Decided {
                event,
                acted: true,
                reason: reason.map(str::to_owned),
                orders: done.clone(),
            })
        }
        Event::Refunded { kind, order_refs } => {
            let mut waiting = 0;
            for order_ref in order_refs {
                let order_ref = OrderRef::parse(&order_ref).map_err(DeliveryError::Order)?;
                match refund(pool, shop, &order_ref, kind).await? {
                    Some(order) => done.push(order),
                    None => {
                        // Its sale is not placed (yet): kept, so that the
                        // sale, placed later, is refunded at once; then
                        // looked for again, in case it committed
                        // meanwhile.
                        remember_early_refund(pool, shop, &order_ref, kind).await?;
                        match refund(pool, shop, &order_ref, kind).await? {
                            Some(order) => done.push(order),
                            None => waiting += 1,
                        }
                    }
                }
            }
            let acted = !done.is_empty();
            Ok(Decided {
                event,
                acted,
                reason: (waiting > 0).then(|| {
                    "no order of this shop yet for this refund: kept, and applied at once if its sale is placed".to_owned()
                }),
                orders: done.clone(),
            })
        }
    }
}

/// Refunds this shop's order, if there is one (`None`: not placed).
async fn refund(
    pool: &PgPool,
    shop: &Shop,
    order_ref: &OrderRef,
    kind: RefundKind,
) -> Result<Option<Uuid>, DeliveryError> {
    let reason = format!("refunded in {}", shop.provider.as_str());
    let request = RefundRequest {
        source: &shop.source,
        order_ref,
        kind,
        reason: Some(&reason),
    };
    match refunds::refund(pool, shop.tenant, shop.owner, &request).await {
        Ok(refunded) => Ok(Some(refunded.refund().order_id)),
        Err(RefundError::OrderNotFound) => Ok(None),
        Err(RefundError::Unexpected(e)) => Err(DeliveryError::Unexpected(e)),
        Err(e) => Err(DeliveryError::Refund(e)),
    }
}

async fn remember_early_refund(
    pool: &PgPool,
    shop: &Shop,
    order_ref: &OrderRef,
    kind: RefundKind,
) -> anyhow::Result<()> {
    sqlx::query!(
        "INSERT INTO shop_early_refunds (tenant_id, integration_id, order_ref, kind)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        shop.tenant.0,
        shop.id,
        order_ref.as_str(),
        kind.as_str(),
    )
    .execute(pool)
    .await
    .context("keeping an early refund")?;
    Ok(())
}

async fn early_refund(
    pool: &PgPool,
    shop: &Shop,
    order_ref: &OrderRef,
) -> Result<Option<RefundKind>, DeliveryError> {
    let kind = sqlx::query_scalar!(
        "SELECT kind FROM shop_early_refunds
         WHERE tenant_id = $1 AND integration_id = $2 AND order_ref = $3",
        shop.tenant.0,
        shop.id,
        order_ref.as_str(),
    )
    .fetch_optional(pool)
    .await
    .context("looking for an early refund")?;
    kind.map(|k| RefundKind::parse(&k).map_err(DeliveryError::Refund))
        .transpose()
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

async fn store_refused(pool: &PgPool, shop: &Shop, error: &DeliveryError) -> anyhow::Result<()> {
    let reason = error.to_string();
    // One at a time per shop (a transaction-scoped lock on the shop's
    // id), so the count cannot be overrun by requests racing past it. A
    // request that finds it taken does not wait (a stranger's flood would
    // hold a connection per request waiting): it is logged, not stored.
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let counting = turns::try_take(&mut tx, &turns::shop_refusals(shop.id))
        .await
        .context("taking a shop's refusal lock")?;
    if !counting {
        tracing::warn!(shop = %shop.id, %reason, "refused a shop delivery (not stored: another is being counted)");
        return Ok(());
    }
    let stored = sqlx::query!(
        "INSERT INTO shop_events (tenant_id, id, integration_id, body, outcome, reason, decided_at)
         SELECT $1, $2, $3, '', 'refused', $4, now()
         WHERE (SELECT count(*) FROM shop_events
                WHERE tenant_id = $1 AND integration_id = $3 AND outcome = 'refused'
                  AND received_at > now() - interval '1 minute') < $5",
        shop.tenant.0,
        Uuid::now_v7(),
        shop.id,
        clip(&reason, 500),
        REFUSED_PER_MINUTE,
    )
    .execute(&mut *tx)
    .await
    .context("storing a refused delivery")?;
    tx.commit().await.context("committing a refused delivery")?;
    if stored.rows_affected() == 0 {
        tracing::warn!(shop = %shop.id, %reason, "refused a shop delivery (not stored: too many this minute)");
    }
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
