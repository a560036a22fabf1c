//! How a [`Settler`](super::Settler) is configured: what to do when Redis
//! does not answer ([`FailurePolicy`]), the reservation TTL, the bound on
//! the transaction and how long one access lasts; and the two hooks only
//! tests set, never configuration: a [`FaultPoint`] that fails the
//! transaction on purpose, and a [`SettlementProbe`] that counts what
//! reached PostgreSQL.

use std::time::Duration;

/// What to do when Redis does not answer a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse the first access with a retryable "unavailable".
    FailClosed,
    /// Settle in PostgreSQL alone (still correct, less shielded).
    DbOnly,
}

/// Where a test may make the transaction fail on purpose (never set by
/// configuration; see the concurrency suite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    AfterBind,
    AfterLearnerDebit,
    AfterRecord,
    AfterShareDebit,
    /// After COMMIT, before the answer: the process "dies" with the work
    /// done; a retry must recognise it.
    AfterCommit,
}

#[derive(Debug, Clone)]
pub struct SettlementOptions {
    pub failure_policy: FailurePolicy,
    /// Reservation TTL: below `transaction_timeout`, so a crashed holder's
    /// reservation is gone before anyone could wait for its transaction.
    pub reservation_ttl: Duration,
    /// Bound on the whole settlement transaction.
    pub transaction_timeout: Duration,
    /// How long one counted access lasts (see the module doc).
    pub grant_ttl: Duration,
    pub fault: Option<FaultPoint>,
    /// Counts what reached the settlement transaction (never set by
    /// configuration; tests read it to know PostgreSQL was contended).
    pub probe: Option<std::sync::Arc<SettlementProbe>>,
}

/// What reached PostgreSQL, counted for tests (see [`SettlementOptions::probe`]).
#[derive(Debug, Default)]
pub struct SettlementProbe {
    /// Settlement transactions begun.
    pub transactions: std::sync::atomic::AtomicU64,
    /// Transactions that found no binding and tried to bind a code.
    pub bind_attempts: std::sync::atomic::AtomicU64,
    /// Transactions rolled back on a unique violation and started over.
    pub start_overs: std::sync::atomic::AtomicU64,
    /// Reservations asked of Redis (a request that waits asks again).
    pub reservations: std::sync::atomic::AtomicU64,
}

impl SettlementProbe {
    /// (transactions, bind attempts, start-overs) so far.
    pub fn counts(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.transactions.load(Relaxed),
            self.bind_attempts.load(Relaxed),
            self.start_overs.load(Relaxed),
        )
    }

    /// Reservations asked of Redis so far.
    pub fn reservations(&self) -> u64 {
        self.reservations.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Default for SettlementOptions {
    fn default() -> Self {
        Self {
            failure_policy: FailurePolicy::FailClosed,
            reservation_ttl: Duration::from_secs(4),
            transaction_timeout: Duration::from_secs(5),
            grant_ttl: Duration::from_secs(6 * 3600),
            fault: None,
            probe: None,
        }
    }
}
