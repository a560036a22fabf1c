//! Webhooks: the outbox's events, delivered to the tenants' own endpoints.
//!
//! Events are written to `outbox` in the same transaction as what they
//! report, so none is lost and none announces something that rolled back.
//! The relay (a background task in every instance) moves them on in two
//! steps, each claiming rows with `FOR UPDATE SKIP LOCKED`, so instances
//! never take the same row:
//!
//! 1. [`fan_out`]: one `webhook_deliveries` row per event and subscribed
//!    endpoint; the event is marked relayed in the same transaction.
//! 2. [`claim_due`]: due deliveries are leased (their due time pushed past
//!    the lease, the attempt counted) and committed before any HTTP call, so
//!    a slow endpoint holds no lock; [`record`] settles each attempt, only if
//!    the lease is still the caller's.
//!
//! Delivery is at least once: an instance that dies between the receiver's
//! 200 and [`record`] leaves the lease to expire, and the event goes again.
//! Receivers de-duplicate by the event id. Failures back off exponentially
//! with jitter; after `max_attempts` a delivery is dead-lettered until an
//! admin redelivers it. Bodies are signed with HMAC-SHA256 over
//! `"{timestamp}.{body}"` ([`sign`]).

use std::time::Duration;

use anyhow::Context as _;
use hmac::{Hmac, Mac as _};
use rand::{Rng as _, RngCore as _};
use secrecy::SecretString;
use serde_json::json;
use sha2::Sha256;
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{accounts::AccountId, audit, tenants::TenantId};

/// Every event a webhook can subscribe to.
pub const EVENTS: [&str; 5] = [
    "code.bound",
    "code.unbound",
    "code.revoked",
    "access.recorded",
    "batch.issued",
];

/// The request header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256>`.
pub const SIGNATURE_HEADER: &str = "AdmitOne-Signature";
/// The request header carrying the event id (de-duplicate by it).
pub const EVENT_ID_HEADER: &str = "AdmitOne-Event-Id";
/// The request header carrying the event type.
pub const EVENT_TYPE_HEADER: &str = "AdmitOne-Event-Type";

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("an endpoint is an http:// or https:// URL of at most 2,000 characters")]
    InvalidUrl,
    #[error("choose at least one event: {}", EVENTS.join(", "))]
    InvalidEvents,
    #[error("no such webhook endpoint")]
    EndpointNotFound,
    #[error("no such delivery, or it is not dead-lettered")]
    DeliveryNotFound,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// An endpoint URL: `http(s)://host…`, no spaces, at most 2,000 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl(String);

impl EndpointUrl {
    pub fn parse(raw: &str) -> Result<Self, WebhookError> {
        let url = raw.trim();
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or(WebhookError::InvalidUrl)?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        // No `user:password@`: it hides the real host from people reading it.
        let valid = url.len() <= 2_000
            && !host.is_empty()
            && !host.contains('@')
            && !host.starts_with(['.', ':'])
            && !url.chars().any(|c| c.is_whitespace() || c.is_control());
        if valid {
            Ok(Self(url.to_owned()))
        } else {
            Err(WebhookError::InvalidUrl)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether `ip` is on the public internet: not loopback, private,
/// link-local (cloud metadata lives there), shared, documentation,
/// benchmarking, reserved, multicast or unspecified. Tenants' endpoints
/// must be public, so that a webhook cannot be aimed at the network
/// AdmitOne runs in.
///
/// IPv6 addresses that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4
/// `2002:aabb:ccdd::`) reach that IPv4 address through a translator or
/// tunnel, so they are decided by it. The local-use NAT64 prefix
/// `64:ff9b:1::/48` only ever leads into a private network, and is refused.
pub fn is_public(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if v6.is_loopback() || v6.is_unspecified() {
                return false;
            }
            if let Some(v4) = embedded_v4(v6) {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            let first = segments[0];
            !(v6.is_multicast()
                // unique local fc00::/7
                || (first & 0xfe00) == 0xfc00
                // link-local fe80::/10
                || (first & 0xffc0) == 0xfe80
                // site-local fec0::/10 (deprecated, still routed inside sites)
                || (first & 0xffc0) == 0xfec0
                // local-use NAT64 64:ff9b:1::/48
                || (first == 0x64 && segments[1] == 0xff9b && segments[2] == 1)
                // documentation 2001:db8::/32
                || (first == 0x2001 && segments[1] == 0x0db8))
        }
    }
}

fn is_public_v4(v4: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.is_multicast()
        || a == 0
        // shared address space 100.64.0.0/10
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments 192.0.0.0/24
        || (a == 192 && b == 0 && c == 0)
        // benchmarking 198.18.0.0/15
        || (a == 198 && (18..20).contains(&b))
        // reserved 240.0.0.0/4
        || a >= 240)
}

/// The IPv4 address an IPv6 address carries, in the forms that deliver to
/// it: IPv4-mapped, IPv4-compatible, NAT64 well-known prefix, 6to4.
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    use std::net::Ipv4Addr;
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-compatible ::a.b.c.d (:: and ::1 are handled before).
    if s[..6] == [0; 6] {
        return Some(low(s[6], s[7]));
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(low(s[6], s[7]));
    }
    // 6to4 2002:aabb:ccdd::/48.
    if s[0] == 0x2002 {
        return Some(low(s[1], s[2]));
    }
    None
}

/// The events an endpoint subscribes to: at least one, each known.
pub fn parse_events<'a>(
    raw: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, WebhookError> {
    let mut events: Vec<String> = Vec::new();
    for event in raw {
        let event = event.trim();
        if !EVENTS.contains(&event) {
            return Err(WebhookError::InvalidEvents);
        }
        if !events.iter().any(|e| e == event) {
            events.push(event.to_owned());
        }
    }
    if events.is_empty() {
        return Err(WebhookError::InvalidEvents);
    }
    Ok(events)
}

/// `t=<timestamp>,v1=<hex>`: HMAC-SHA256 with `secret` over
/// `"{timestamp}.{body}"`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp},v1={hex}")
}

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
        r#"SELECT d.endpoint_id, d.event_id, e.url, o.event_type, d.attempts, o.created_at,
                  d.next_attempt_at, d.delivered_at, d.dead_at, d.last_status, d.last_error
           FROM webhook_deliveries d
           JOIN webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
           JOIN outbox o ON o.tenant_id = d.tenant_id AND o.id = d.event_id
           WHERE d.tenant_id = $1 AND d.delivered_at IS NULL AND (d.dead_at IS NOT NULL OR d.attempts > 0)
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

/// Puts a dead-lettered delivery back in line, with fresh attempts.
pub async fn redeliver(
    pool: &PgPool,
    tenant: TenantId,
    actor: AccountId,
    endpoint: Uuid,
    event: Uuid,
) -> Result<(), WebhookError> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    let revived = sqlx::query!(
        "UPDATE webhook_deliveries
         SET dead_at = NULL, attempts = 0, next_attempt_at = now(), last_error = NULL
         WHERE tenant_id = $1 AND endpoint_id = $2 AND event_id = $3
           AND dead_at IS NOT NULL AND delivered_at IS NULL
           AND EXISTS (SELECT 1 FROM webhook_endpoints e
                       WHERE e.tenant_id = $1 AND e.id = $2 AND e.disabled_at IS NULL)",
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

/// Step 1 of the relay: turns up to `limit` unrelayed outbox events into
/// deliveries (one per subscribed, enabled endpoint) and marks them
/// relayed. Returns how many events it took.
pub async fn fan_out(pool: &PgPool, limit: i64) -> anyhow::Result<usize> {
    let mut tx = pool.begin().await.context("starting the fan-out")?;
    let events = sqlx::query!(
        "SELECT tenant_id, id FROM outbox
         WHERE delivered_at IS NULL AND available_at <= now()
         ORDER BY available_at, id
         LIMIT $1
         FOR UPDATE SKIP LOCKED",
        limit,
    )
    .fetch_all(&mut *tx)
    .await
    .context("claiming outbox events")?;
    if events.is_empty() {
        return Ok(0);
    }
    let tenants: Vec<Uuid> = events.iter().map(|e| e.tenant_id).collect();
    let ids: Vec<Uuid> = events.iter().map(|e| e.id).collect();
    sqlx::query!(
        "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id)
         SELECT o.tenant_id, e.id, o.id
         FROM UNNEST($1::uuid[], $2::uuid[]) AS c(tenant_id, id)
         JOIN outbox o ON o.tenant_id = c.tenant_id AND o.id = c.id
         JOIN webhook_endpoints e ON e.tenant_id = o.tenant_id
                                 AND e.disabled_at IS NULL
                                 AND o.event_type = ANY (e.events)
         ON CONFLICT DO NOTHING",
        &tenants,
        &ids,
    )
    .execute(&mut *tx)
    .await
    .context("creating deliveries")?;
    sqlx::query!(
        "UPDATE outbox SET delivered_at = now()
         FROM UNNEST($1::uuid[], $2::uuid[]) AS c(tenant_id, id)
         WHERE outbox.tenant_id = c.tenant_id AND outbox.id = c.id",
        &tenants,
        &ids,
    )
    .execute(&mut *tx)
    .await
    .context("marking events relayed")?;
    tx.commit().await.context("committing the fan-out")?;
    Ok(events.len())
}

/// A delivery leased to one relay: what to send, where, and the attempt
/// number that proves the lease is still this relay's.
#[derive(Debug, Clone)]
pub struct Due {
    pub tenant_id: Uuid,
    pub endpoint_id: Uuid,
    pub event_id: Uuid,
    pub attempt: i32,
    pub url: String,
    pub secret: String,
    pub event_type: String,
    /// The request body (JSON), exactly as signed.
    pub body: Vec<u8>,
}

/// Step 2 of the relay: leases up to `limit` due deliveries for `lease`.
pub async fn claim_due(pool: &PgPool, limit: i64, lease: Duration) -> anyhow::Result<Vec<Due>> {
    let rows = sqlx::query!(
        r#"WITH due AS (
               SELECT tenant_id, endpoint_id, event_id FROM webhook_deliveries
               WHERE delivered_at IS NULL AND dead_at IS NULL AND next_attempt_at <= now()
               ORDER BY next_attempt_at
               LIMIT $1
               FOR UPDATE SKIP LOCKED
           )
           UPDATE webhook_deliveries d
           SET attempts = d.attempts + 1,
               next_attempt_at = now() + make_interval(secs => $2)
           FROM due, webhook_endpoints e, outbox o
           WHERE d.tenant_id = due.tenant_id AND d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
             AND e.tenant_id = d.tenant_id AND e.id = d.endpoint_id AND e.disabled_at IS NULL
             AND o.tenant_id = d.tenant_id AND o.id = d.event_id
           RETURNING d.tenant_id, d.endpoint_id, d.event_id, d.attempts, e.url, e.secret,
                     o.event_type, o.payload, o.created_at"#,
        limit,
        lease.as_secs_f64(),
    )
    .fetch_all(pool)
    .await
    .context("leasing due deliveries")?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let body = json!({
                "id": r.event_id,
                "type": r.event_type,
                "tenant_id": r.tenant_id,
                "created_at": r.created_at.unix_timestamp(),
                "data": r.payload,
            });
            Due {
                tenant_id: r.tenant_id,
                endpoint_id: r.endpoint_id,
                event_id: r.event_id,
                attempt: r.attempts,
                url: r.url,
                secret: r.secret,
                event_type: r.event_type,
                body: body.to_string().into_bytes(),
            }
        })
        .collect())
}

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempted {
    /// The endpoint answered 2xx.
    Delivered { status: u16 },
    /// Anything else: a status, a timeout, a refused connection.
    Failed { status: Option<u16>, error: String },
}

/// When the relay tries a failed delivery again.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_attempts: i32,
    pub base: Duration,
    pub max: Duration,
}

impl RetryPolicy {
    /// The pause after attempt `attempt` failed: `base · 2^(attempt-1)`,
    /// capped at `max`, then a random point in its upper half (jitter, so
    /// an endpoint that comes back is not hit by every retry at once).
    pub fn backoff(&self, attempt: i32) -> Duration {
        let exponent = u32::try_from(attempt.saturating_sub(1))
            .unwrap_or(0)
            .min(30);
        let full = self
            .base
            .saturating_mul(2_u32.saturating_pow(exponent))
            .min(self.max);
        let half = full / 2;
        half + full
            .saturating_sub(half)
            .mul_f64(rand::thread_rng().r#gen::<f64>())
    }
}

/// What [`record`] did with an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Delivered,
    WillRetry,
    Dead,
    /// The lease had passed to another relay; nothing was written.
    LeaseLost,
}

/// Settles one attempt of a leased delivery.
pub async fn record(
    pool: &PgPool,
    due: &Due,
    outcome: &Attempted,
    policy: &RetryPolicy,
) -> anyhow::Result<Recorded> {
    let (recorded, changed) = match outcome {
        Attempted::Delivered { status } => {
            let changed = sqlx::query!(
                "UPDATE webhook_deliveries SET delivered_at = now(), last_status = $4, last_error = NULL
                 WHERE tenant_id = $1 AND endpoint_id = $2 AND event_id = $3 AND attempts = $5
                   AND delivered_at IS NULL AND dead_at IS NULL",
                due.tenant_id,
                due.endpoint_id,
                due.event_id,
                i32::from(*status),
                due.attempt,
            )
            .execute(pool)
            .await
            .context("recording a delivery")?;
            (Recorded::Delivered, changed.rows_affected())
        }
        Attempted::Failed { status, error } => {
            let dead = due.attempt >= policy.max_attempts;
            let retry_in = policy.backoff(due.attempt);
            let error: String = error.chars().take(500).collect();
            let changed = sqlx::query!(
                "UPDATE webhook_deliveries
                 SET last_status = $4, last_error = $5,
                     dead_at = CASE WHEN $6 THEN now() END,
                     next_attempt_at = now() + make_interval(secs => $7)
                 WHERE tenant_id = $1 AND endpoint_id = $2 AND event_id = $3 AND attempts = $8
                   AND delivered_at IS NULL AND dead_at IS NULL",
                due.tenant_id,
                due.endpoint_id,
                due.event_id,
                status.map(i32::from),
                error,
                dead,
                retry_in.as_secs_f64(),
                due.attempt,
            )
            .execute(pool)
            .await
            .context("recording a failed delivery")?;
            (
                if dead {
                    Recorded::Dead
                } else {
                    Recorded::WillRetry
                },
                changed.rows_affected(),
            )
        }
    };
    Ok(if changed == 0 {
        Recorded::LeaseLost
    } else {
        recorded
    })
}

/// Outbox events not yet relayed, and dead-lettered deliveries: the two
/// numbers an operator alerts on.
pub async fn backlog(pool: &PgPool) -> anyhow::Result<(i64, i64)> {
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM outbox WHERE delivered_at IS NULL) AS "outbox!",
                  (SELECT count(*) FROM webhook_deliveries
                    WHERE dead_at IS NOT NULL AND delivered_at IS NULL) AS "dead!""#
    )
    .fetch_one(pool)
    .await
    .context("counting the backlog")?;
    Ok((row.outbox, row.dead))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_http_or_https_with_a_host() {
        assert!(EndpointUrl::parse(" https://hooks.example.com/admitone ").is_ok());
        assert!(EndpointUrl::parse("http://127.0.0.1:8080/x?y=1").is_ok());
        for bad in [
            "",
            "ftp://example.com",
            "https://",
            "https:///path",
            "https://exa mple.com",
            "javascript:alert(1)",
            "https://example.com/a\u{7}b",
        ] {
            assert!(EndpointUrl::parse(bad).is_err(), "{bad:?}");
        }
        assert!(EndpointUrl::parse(&format!("https://e.com/{}", "a".repeat(2_000))).is_err());
    }

    #[test]
    fn only_public_addresses_are_delivered_to() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().expect("ip")), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(is_public(public.parse().expect("ip")), "{public}");
        }
        assert!(EndpointUrl::parse("https://user:pw@example.com/hook").is_err());
    }

    /// Every special-purpose range, including IPv6 forms that carry an
    /// IPv4 address (decided by that address).
    #[test]
    fn special_ranges_and_embedded_ipv4_forms_are_not_public() {
        let table: &[(&str, bool)] = &[
            // IPv4
            ("93.184.216.34", true),
            ("8.8.8.8", true),
            ("192.0.0.1", false),       // IETF protocol assignments
            ("192.0.0.170", false),     // NAT64 discovery
            ("240.0.0.1", false),       // reserved
            ("250.1.2.3", false),       // reserved
            ("255.255.255.255", false), // broadcast
            ("192.0.2.1", false),       // documentation
            ("198.18.0.1", false),      // benchmarking
            // IPv4-mapped and IPv4-compatible
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
            ("::127.0.0.1", false),
            ("::10.0.0.1", false),
            ("::169.254.169.254", false),
            ("::8.8.8.8", true),
            // NAT64 well-known prefix (RFC 6052)
            ("64:ff9b::127.0.0.1", false),
            ("64:ff9b::a9fe:a9fe", false), // 169.254.169.254
            ("64:ff9b::10.1.2.3", false),
            ("64:ff9b::8.8.8.8", true),
            // Local-use NAT64 (RFC 8215): private networks by definition
            ("64:ff9b:1::8.8.8.8", false),
            ("64:ff9b:1:abcd::1", false),
            // 6to4 (RFC 3056): the IPv4 address in bits 16..48
            ("2002:7f00:1::1", false),    // 127.0.0.1
            ("2002:a00:1::1", false),     // 10.0.0.1
            ("2002:a9fe:a9fe::1", false), // 169.254.169.254
            ("2002:c0a8:101::1", false),  // 192.168.1.1
            ("2002:808:808::1", true),    // 8.8.8.8
            // Site-local (deprecated, still routed internally)
            ("fec0::1", false),
            ("feff::1", false),
            // Unique local, link-local, loopback, unspecified, multicast
            ("fd12:3456::1", false),
            ("fe80::1", false),
            ("::1", false),
            ("::", false),
            ("ff02::1", false),
            // Documentation
            ("2001:db8::1", false),
            // Public IPv6
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001::200e", true),
        ];
        for (ip, public) in table {
            assert_eq!(is_public(ip.parse().expect("ip")), *public, "{ip}");
        }
    }

    #[test]
    fn events_are_known_and_deduplicated() {
        assert_eq!(
            parse_events(["code.bound", "batch.issued", "code.bound"]).expect("ok"),
            vec!["code.bound", "batch.issued"]
        );
        assert!(parse_events([]).is_err());
        assert!(parse_events(["code.bound", "code.stolen"]).is_err());
    }

    #[test]
    fn signatures_are_hmac_sha256_over_timestamp_and_body() {
        // Independently computed: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            sign("whsec_test", 1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 5,
            base: Duration::from_secs(2),
            max: Duration::from_secs(60),
        };
        for _ in 0..100 {
            let first = policy.backoff(1);
            assert!(
                first >= Duration::from_secs(1) && first <= Duration::from_secs(2),
                "{first:?}"
            );
            let third = policy.backoff(3);
            assert!(
                third >= Duration::from_secs(4) && third <= Duration::from_secs(8),
                "{third:?}"
            );
            let late = policy.backoff(30);
            assert!(
                late >= Duration::from_secs(30) && late <= Duration::from_secs(60),
                "{late:?}"
            );
        }
    }
}
