//! The relay's side of webhooks: its two claiming steps ([`fan_out`],
//! [`claim_due`]), the record of each attempt ([`record`]) under the
//! [`RetryPolicy`], the backlog an operator alerts on, and the request
//! signature ([`sign`] and the headers it travels in). The HTTP calls
//! themselves are the server's (`server/src/relay.rs`); this module is
//! what they read and write in PostgreSQL.

use std::time::Duration;

use anyhow::Context as _;
use hmac::{Hmac, Mac as _};
use serde_json::json;
use sha2::Sha256;
use sqlx::PgPool;
use uuid::Uuid;

/// The request header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256>`.
pub const SIGNATURE_HEADER: &str = "AdmitOne-Signature";
/// The request header carrying the event id (de-duplicate by it).
pub const EVENT_ID_HEADER: &str = "AdmitOne-Event-Id";
/// The request header carrying the event type.
pub const EVENT_TYPE_HEADER: &str = "AdmitOne-Event-Type";

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
         -- An endpoint being disabled meanwhile is waited for, then read
         -- again: else its delivery, made from a snapshot that still saw
         -- it enabled, would miss the disabling's dead-lettering and wait
         -- forever.
         FOR SHARE OF e
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
    /// Which try this is since the delivery was last put back in line
    /// (the retry budget counts these; `attempt` never goes back).
    pub try_number: i32,
    pub url: String,
    pub secret: String,
    pub event_type: String,
    /// The request body (JSON), exactly as signed.
    pub body: Vec<u8>,
}

/// Step 2 of the relay: leases up to `limit` due deliveries for `lease`,
/// round-robin across tenants: every tenant's oldest due delivery first,
/// then every tenant's next, so one tenant's backlog delays only itself.
/// Deliveries of a disabled or paused endpoint ([`note_answer`]) wait.
pub async fn claim_due(pool: &PgPool, limit: i64, lease: Duration) -> anyhow::Result<Vec<Due>> {
    let rows = sqlx::query!(
        r#"WITH ranked AS (
               SELECT d.tenant_id, d.endpoint_id, d.event_id, d.next_attempt_at,
                      row_number() OVER (PARTITION BY d.tenant_id
                                         ORDER BY d.next_attempt_at, d.event_id) AS turn
                 FROM webhook_deliveries d
                 JOIN webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
                WHERE d.delivered_at IS NULL AND d.dead_at IS NULL AND d.next_attempt_at <= now()
                  AND e.disabled_at IS NULL AND (e.paused_until IS NULL OR e.paused_until <= now())
           ), due AS (
               SELECT d.tenant_id, d.endpoint_id, d.event_id
                 FROM webhook_deliveries d
                 JOIN (SELECT tenant_id, endpoint_id, event_id, turn, next_attempt_at FROM ranked
                        WHERE turn <= $1 ORDER BY turn, next_attempt_at LIMIT $1 * 4) r
                   ON r.tenant_id = d.tenant_id AND r.endpoint_id = d.endpoint_id
                  AND r.event_id = d.event_id
                -- Checked again on the row as locked: a lease another relay
                -- committed after this statement began pushed it past now().
                WHERE d.delivered_at IS NULL AND d.dead_at IS NULL AND d.next_attempt_at <= now()
                ORDER BY r.turn, r.next_attempt_at
                LIMIT $1
                FOR UPDATE OF d SKIP LOCKED
           )
           UPDATE webhook_deliveries d
           SET attempts = d.attempts + 1,
               next_attempt_at = now() + make_interval(secs => $2)
           FROM due, webhook_endpoints e, outbox o
           WHERE d.tenant_id = due.tenant_id AND d.endpoint_id = due.endpoint_id AND d.event_id = due.event_id
             AND e.tenant_id = d.tenant_id AND e.id = d.endpoint_id AND e.disabled_at IS NULL
             AND o.tenant_id = d.tenant_id AND o.id = d.event_id
           RETURNING d.tenant_id, d.endpoint_id, d.event_id, d.attempts,
                     d.attempts - d.attempts_before_redelivery AS "try_number!", e.url, e.secret,
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
                try_number: r.try_number,
                url: r.url,
                secret: r.secret,
                event_type: r.event_type,
                body: body.to_string().into_bytes(),
            }
        })
        .collect())
}

pub use crate::delivery::{Attempted, Recorded, RetryPolicy};

/// Timeouts in a row after which an endpoint is paused: it costs the relay
/// a whole timeout per attempt, and others' deliveries wait for the slots
/// it holds. The first pause is the relay's `pause` (a minute by
/// default), each further one doubles, up to 64 times it.
pub const PAUSE_AFTER_TIMEOUTS: i32 = 3;

/// Notes how a delivery's endpoint answered: a timeout counts one more in
/// a row (and pauses the endpoint from [`PAUSE_AFTER_TIMEOUTS`] on); any
/// answer, even a refusal, ends the count and the pause.
pub async fn note_answer(
    pool: &PgPool,
    due: &Due,
    timed_out: bool,
    pause: Duration,
) -> anyhow::Result<()> {
    if timed_out {
        sqlx::query!(
            "UPDATE webhook_endpoints
             SET consecutive_timeouts = consecutive_timeouts + 1,
                 paused_until = CASE WHEN consecutive_timeouts + 1 >= $3
                     THEN now() + make_interval(secs => $4)
                          * power(2, least(consecutive_timeouts + 1 - $3, 6))
                     ELSE paused_until END
             WHERE tenant_id = $1 AND id = $2",
            due.tenant_id,
            due.endpoint_id,
            PAUSE_AFTER_TIMEOUTS,
            pause.as_secs_f64(),
        )
        .execute(pool)
        .await
        .context("counting an endpoint's timeout")?;
    } else {
        sqlx::query!(
            "UPDATE webhook_endpoints SET consecutive_timeouts = 0, paused_until = NULL
             WHERE tenant_id = $1 AND id = $2
               AND (consecutive_timeouts <> 0 OR paused_until IS NOT NULL)",
            due.tenant_id,
            due.endpoint_id,
        )
        .execute(pool)
        .await
        .context("ending an endpoint's pause")?;
    }
    Ok(())
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
        Attempted::Failed { status, error } | Attempted::Permanent { status, error } => {
            let permanent = matches!(outcome, Attempted::Permanent { .. });
            let (dead, retry_in) = policy.after_failure(due.try_number, permanent);
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
    fn signatures_are_hmac_sha256_over_timestamp_and_body() {
        // Independently computed: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            sign("whsec_test", 1_700_000_000, br#"{"a":1}"#),
            "t=1700000000,v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
    }
}
