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
//!
//! Where each part lives:
//!
//! * this file: the events an endpoint can subscribe to, and [`WebhookError`];
//! * [`destination`]: what an endpoint may be: its URL, and the address
//!   filter that keeps webhooks off the network AdmitOne runs in;
//! * [`admin`]: what the console does: endpoints added, listed and
//!   disabled, deliveries that need a look, and redelivery;
//! * [`relay`]: the relay's claims and records, its retry policy and the
//!   signature.
//!
//! [`fan_out`]: relay::fan_out
//! [`claim_due`]: relay::claim_due
//! [`record`]: relay::record
//! [`sign`]: relay::sign

pub mod destination;
pub mod endpoints;
pub mod relay;

/// Every event a webhook can subscribe to.
pub const EVENTS: [&str; 10] = [
    "code.bound",
    "code.unbound",
    "code.revoked",
    "code.replaced",
    "code.transferred",
    "code.leak_suspected",
    "access.recorded",
    "batch.issued",
    "order.placed",
    "order.refunded",
];

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
    /// Each endpoint's deliveries cost the relay every tenant shares.
    #[error(
        "this tenant has {} webhook endpoints, the most it may have: disable one first",
        endpoints::MAX_ENDPOINTS
    )]
    TooMany,
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_known_and_deduplicated() {
        assert_eq!(
            parse_events(["code.bound", "batch.issued", "code.bound"]).expect("ok"),
            vec!["code.bound", "batch.issued"]
        );
        assert!(parse_events([]).is_err());
        assert!(parse_events(["code.bound", "code.stolen"]).is_err());
    }
}
