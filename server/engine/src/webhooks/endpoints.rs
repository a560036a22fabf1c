//! What the admin console does with webhooks: add an endpoint (its signing
//! secret shown once), list, read, change and disable endpoints, list the deliveries
//! that need a look and put a dead-lettered one back in line. Every action
//! is audited; every query filters by the tenant passed in.

use anyhow::Context as _;
use rand::RngCore as _;
use secrecy::SecretString;
use serde_json::json;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{WebhookError, destination::EndpointUrl};
use crate::{accounts::AccountId, audit, tenants::TenantId};

/// The most endpoints one tenant may have (not disabled): each one's
/// deliveries take turns in the relay every tenant shares.
pub const MAX_ENDPOINTS: i64 = 10;

/// A tenant's endpoint, as the console lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub created_at: OffsetDateTime,
    pub disabled_at: Option<OffsetDateTime>,
    /// Deliveries dead-lettered and not redelivered.
    pub dead: i64,
    pub delivered: i64,
}

/// Adds an endpoint; the answer holds its signing secret, shown once.
pub async fn create_endpoint(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    url: &EndpointUrl,
    events: &[String],
) -> Result<(Uuid, SecretString), WebhookError> {
    if events.is_empty() {
        return Err(WebhookError::InvalidEvents);
    }
    let mut bytes = [0_u8; 24];
    rand::thread_rng().fill_bytes(&mut bytes);
    let secret: String = "whsec_"
        .chars()
        .chain(
            bytes
                .iter()
                .flat_map(|b| format!("{b:02x}").chars().collect::<Vec<_>>()),
        )
        .collect();
    let id = Uuid::now_v7();
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // Counted under the tenant's lock: two creations at once cannot both
    // take the last place.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('webhook_endpoints:' || $1::uuid::text, 0))",
        tenant.0,
    )
    .execute(&mut *tx)
    .await
    .context("locking the tenant's endpoints")?;
    let live = sqlx::query_scalar!(
        r#"SELECT count(*) AS "live!" FROM webhook_endpoints WHERE tenant_id = $1 AND disabled_at IS NULL"#,
        tenant.0,
    )
    .fetch_one(&mut *tx)
    .await
    .context("counting the tenant's endpoints")?;
    if live >= MAX_ENDPOINTS {
        return Err(WebhookError::TooMany);
    }
    sqlx::query!(
        "INSERT INTO webhook_endpoints (tenant_id, id, url, secret, events, created_by)
         VALUES ($1, $2, $3, $4, $5, $6)",
        tenant.0,
        id,
        url.as_str(),
        secret,
        events,
        actor.0,
    )
    .execute(&mut *tx)
    .await
    .context("inserting a webhook endpoint")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "webhook.created",
        ("webhook_endpoint", id),
        json!({ "url": url.as_str(), "events": events }),
    )
    .await?;
    tx.commit().await.context("committing the endpoint")?;
    Ok((id, SecretString::from(secret)))
}

/// The tenant's endpoints, newest first, with their delivery counts.
pub async fn endpoints(pool: &PgPool, tenant: TenantId) -> anyhow::Result<Vec<Endpoint>> {
    let rows = sqlx::query!(
        r#"SELECT e.id, e.url, e.events, e.created_at, e.disabled_at,
                  (SELECT count(*) FROM webhook_deliveries d
                    WHERE d.tenant_id = e.tenant_id AND d.endpoint_id = e.id
                      AND d.dead_at IS NOT NULL AND d.delivered_at IS NULL) AS "dead!",
                  (SELECT count(*) FROM webhook_deliveries d
                    WHERE d.tenant_id = e.tenant_id AND d.endpoint_id = e.id
                      AND d.delivered_at IS NOT NULL) AS "delivered!"
           FROM webhook_endpoints e WHERE e.tenant_id = $1
           ORDER BY e.created_at DESC, e.id DESC"#,
        tenant.0,
    )
    .fetch_all(pool)
    .await
    .context("listing webhook endpoints")?;
    Ok(rows
        .into_iter()
        .map(|r| Endpoint {
            id: r.id,
            url: r.url,
            events: r.events,
            created_at: r.created_at,
            disabled_at: r.disabled_at,
            dead: r.dead,
            delivered: r.delivered,
        })
        .collect())
}

/// One endpoint of the tenant, if it exists.
pub async fn endpoint(
    pool: &PgPool,
    tenant: TenantId,
    id: Uuid,
) -> anyhow::Result<Option<Endpoint>> {
    Ok(endpoints(pool, tenant)
        .await?
        .into_iter()
        .find(|e| e.id == id))
}

/// Points an endpoint at another URL and another set of events (its
/// secret stays; a disabled one stays disabled). Every delivery not yet
/// made goes to the new URL at its next attempt (the URL is read at each
/// attempt; retries keep their schedule, and dead-lettered ones can be
/// redelivered); events from now on are fanned out by the new list.
/// Audited `webhook.updated` with what it was and what it is.
pub async fn update_endpoint(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    endpoint: Uuid,
    url: &EndpointUrl,
    events: &[String],
    lease: std::time::Duration,
) -> Result<(), WebhookError> {
    if events.is_empty() {
        return Err(WebhookError::InvalidEvents);
    }
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let before = sqlx::query!(
        "SELECT url, events FROM webhook_endpoints WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        tenant.0,
        endpoint,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("locking a webhook endpoint")?
    .ok_or(WebhookError::EndpointNotFound)?;
    sqlx::query!(
        // A new address starts afresh: no timeouts counted, no pause.
        "UPDATE webhook_endpoints SET url = $3, events = $4,
             consecutive_timeouts = CASE WHEN url = $3 THEN consecutive_timeouts ELSE 0 END,
             paused_until = CASE WHEN url = $3 THEN paused_until END
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        endpoint,
        url.as_str(),
        events,
    )
    .execute(&mut *tx)
    .await
    .context("changing a webhook endpoint")?;
    // A new address is usually the fix for the old one's failures: the
    // deliveries waiting out a backoff go to it now, not hours later. One
    // due within a lease of now may be out with a relay this moment (its
    // due time is its lease's end): it is left alone, so nothing is sent
    // twice at once.
    let retried_now = if before.url == url.as_str() {
        0
    } else {
        sqlx::query!(
            "UPDATE webhook_deliveries SET next_attempt_at = now()
             WHERE tenant_id = $1 AND endpoint_id = $2
               AND delivered_at IS NULL AND dead_at IS NULL
               AND next_attempt_at > now() + make_interval(secs => $3)",
            tenant.0,
            endpoint,
            lease.as_secs_f64(),
        )
        .execute(&mut *tx)
        .await
        .context("bringing an endpoint's waiting deliveries forward")?
        .rows_affected()
    };
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "webhook.updated",
        ("webhook_endpoint", endpoint),
        json!({
            "from": { "url": before.url, "events": before.events },
            "to": { "url": url.as_str(), "events": events },
            "retried_now": retried_now,
        }),
    )
    .await?;
    tx.commit().await.context("committing the change")?;
    Ok(())
}

/// Stops an endpoint: nothing new is fanned out to it, and its pending
/// deliveries are dead-lettered (an admin can still redeliver them).
pub async fn disable_endpoint(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    endpoint: Uuid,
) -> Result<(), WebhookError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let disabled = sqlx::query!(
        "UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, now())
         WHERE tenant_id = $1 AND id = $2",
        tenant.0,
        endpoint,
    )
    .execute(&mut *tx)
    .await
    .context("disabling a webhook endpoint")?;
    if disabled.rows_affected() == 0 {
        return Err(WebhookError::EndpointNotFound);
    }
    sqlx::query!(
        "UPDATE webhook_deliveries SET dead_at = now(), last_error = 'endpoint disabled'
         WHERE tenant_id = $1 AND endpoint_id = $2 AND delivered_at IS NULL AND dead_at IS NULL",
        tenant.0,
        endpoint,
    )
    .execute(&mut *tx)
    .await
    .context("dead-lettering a disabled endpoint's deliveries")?;
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "webhook.disabled",
        ("webhook_endpoint", endpoint),
        json!({}),
    )
    .await?;
    tx.commit().await.context("committing the change")?;
    Ok(())
}

/// A delivery as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub url: String,
    pub event_type: String,
    /// Attempts since the delivery was last put back in line.
    pub attempts: i32,
    pub created_at: OffsetDateTime,
    pub next_attempt_at: OffsetDateTime,
    pub delivered_at: Option<OffsetDateTime>,
    pub dead_at: Option<OffsetDateTime>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
}

/// The tenant's deliveries that need a look: dead-lettered ones and those
/// still retrying, oldest event first.
pub async fn troubled(
    pool: &PgPool,
    tenant: TenantId,
    limit: i64,
) -> anyhow::Result<Vec<Delivery>> {
    let rows = sqlx::query!(
        r#"SELECT d.endpoint_id, d.event_id, e.url, o.event_type,
                  d.attempts - d.attempts_before_redelivery AS "attempts!", o.created_at,
                  d.next_attempt_at, d.delivered_at, d.dead_at, d.last_status, d.last_error
           FROM webhook_deliveries d
           JOIN webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
           JOIN outbox o ON o.tenant_id = d.tenant_id AND o.id = d.event_id
           WHERE d.tenant_id = $1 AND d.delivered_at IS NULL
             AND (d.dead_at IS NOT NULL OR d.attempts > d.attempts_before_redelivery)
           ORDER BY o.created_at, d.event_id
           LIMIT $2"#,
        tenant.0,
        limit,
    )
    .fetch_all(pool)
    .await
    .context("listing troubled deliveries")?;
    Ok(rows
        .into_iter()
        .map(|r| Delivery {
            endpoint_id: r.endpoint_id,
            event_id: r.event_id,
            url: r.url,
            event_type: r.event_type,
            attempts: r.attempts,
            created_at: r.created_at,
            next_attempt_at: r.next_attempt_at,
            delivered_at: r.delivered_at,
            dead_at: r.dead_at,
            last_status: r.last_status,
            last_error: r.last_error,
        })
        .collect())
}

/// Puts a dead-lettered delivery back in line, with a fresh retry budget.
/// Its attempt number goes on: it is the lease's token
/// (`relay::record`), and a token is never handed out twice.
pub async fn redeliver(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    endpoint: Uuid,
    event: Uuid,
) -> Result<(), WebhookError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    // The endpoint, held until this commits: a disabling in flight is
    // waited for (and then seen), and one that comes after dead-letters
    // what this revived. Read without the lock, a disabling committing in
    // between would miss the revived delivery, left waiting forever.
    let enabled = sqlx::query_scalar!(
        "SELECT 1 FROM webhook_endpoints
         WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NULL
         FOR SHARE",
        tenant.0,
        endpoint,
    )
    .fetch_optional(&mut *tx)
    .await
    .context("reading the endpoint")?;
    if enabled.is_none() {
        return Err(WebhookError::DeliveryNotFound);
    }
    let revived = sqlx::query!(
        "UPDATE webhook_deliveries
         SET dead_at = NULL, attempts_before_redelivery = attempts, next_attempt_at = now(),
             last_error = NULL
         WHERE tenant_id = $1 AND endpoint_id = $2 AND event_id = $3
           AND dead_at IS NOT NULL AND delivered_at IS NULL",
        tenant.0,
        endpoint,
        event,
    )
    .execute(&mut *tx)
    .await
    .context("reviving a delivery")?;
    if revived.rows_affected() == 0 {
        return Err(WebhookError::DeliveryNotFound);
    }
    audit::admin_action(
        &mut tx,
        tenant,
        actor,
        "webhook.redelivered",
        ("webhook_endpoint", endpoint),
        json!({ "event_id": event }),
    )
    .await?;
    tx.commit().await.context("committing the redelivery")?;
    Ok(())
}
