//! Taking turns without holding a connection.
//!
//! A shop delivers one sale or one refund many times at once: its
//! retries, two webhooks for one event, several instances of ours. The
//! first delivery does the work; the others wait for it to commit and
//! then answer from what it wrote. Waiting inside PostgreSQL (on the row
//! or the unique key the first one holds) would keep a pooled connection
//! per waiter: fifty deliveries then hold the whole pool, and a learner
//! opening a course meanwhile waits for a connection and is told
//! "unavailable" (`api_v1::retry_storms` shows it). So a delivery first
//! takes its order's turn ([`try_take`]: an advisory lock of its
//! transaction that never waits); a delivery that finds the turn taken
//! rolls back, gives its connection back, and sleeps outside the pool
//! ([`Waits`]) before it looks again. Only the turn's holder waits on
//! rows, and only on what someone else (an admin, a learner) holds for a
//! moment.
//!
//! The turns are named here ([`order`], [`shop_refusals`]) and hashed
//! into their lock keys by SHA-256 ([`lock_key`]), apart from the other
//! advisory locks, which are the engine's own names.

use std::time::Duration;

use anyhow::Context as _;
use sqlx::PgConnection;

use crate::tenants::TenantId;

/// The waits between looks, about nine seconds in all: a first delivery
/// takes milliseconds, one of a thousand codes or under a loaded machine
/// seconds; past them the delivery is answered "busy" (its shop retries).
const WAITS_MS: [u64; 16] = [
    10, 20, 40, 80, 160, 250, 400, 600, 800, 1000, 1000, 1000, 1000, 1000, 1000, 1000,
];

/// The turn of one order, named as its shop names it: its placement and
/// its refunds take turns.
pub fn order(tenant: TenantId, source: &str, order_ref: &str) -> String {
    format!("order:{}:{source}:{order_ref}", tenant.0)
}

/// The turn of counting one shop's refused deliveries
/// (`shops::intake`): a request that finds it taken does not store its
/// refusal (a stranger's flood must not hold a connection per request).
pub fn shop_refusals(shop: uuid::Uuid) -> String {
    format!("shop_refusals:{shop}")
}

/// Takes `turn` for the transaction open on `conn` (until it ends), if
/// no other transaction holds it; `false`: another holds it, and nothing
/// was waited for.
pub async fn try_take(conn: &mut PgConnection, turn: &str) -> anyhow::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT pg_try_advisory_xact_lock($1) AS "taken!""#,
        lock_key(turn),
    )
    .fetch_one(conn)
    .await
    .context("taking a turn")
}

/// A turn's advisory lock key: the first 8 bytes of its name's SHA-256.
/// A name holds what a tenant chose (an order id), and PostgreSQL's
/// advisory locks are one space: with `hashtextextended`, which is not
/// made to resist a chosen collision, a crafted order id could take the
/// lock of another use (a share's quota lock, say) and stall it.
fn lock_key(turn: &str) -> i64 {
    use sha2::{Digest as _, Sha256};
    let digest = Sha256::digest(format!("admitone-turn:{turn}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// The waits of one request, holding no connection.
#[derive(Debug, Default)]
pub struct Waits {
    done: usize,
}

impl Waits {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sleeps the next wait; `false` (at once) when they are spent.
    pub async fn next(&mut self) -> bool {
        let Some(ms) = WAITS_MS.get(self.done) else {
            return false;
        };
        self.done += 1;
        tokio::time::sleep(Duration::from_millis(*ms)).await;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waits_grow_and_stay_under_ten_seconds() {
        assert!(WAITS_MS.windows(2).all(|w| w[0] <= w[1]));
        let total: u64 = WAITS_MS.iter().sum();
        assert!((5_000..10_000).contains(&total), "{total} ms");
    }

    #[test]
    fn a_turns_key_is_its_names_alone() {
        assert_eq!(lock_key("order:a"), lock_key("order:a"));
        assert_ne!(lock_key("order:a"), lock_key("order:b"));
        assert_ne!(lock_key("order:a"), lock_key("shop_refusals:a"));
    }

    #[test]
    fn an_orders_turn_names_its_tenant_source_and_id() {
        let tenant = TenantId(uuid::Uuid::nil());
        assert_ne!(order(tenant, "stripe", "a"), order(tenant, "stripe", "b"));
        assert_ne!(order(tenant, "stripe", "a"), order(tenant, "paddle", "a"));
        assert_ne!(
            order(tenant, "stripe", "a"),
            order(TenantId(uuid::Uuid::max()), "stripe", "a")
        );
    }
}
