//! What the two relays (webhook deliveries and mail) share: how one
//! attempt went, what recording it did, and when a failed one is tried
//! again.
//!
//! Both relays work the same way on their own table: a due row is leased
//! (its attempt counted, its due time pushed past the lease) and committed
//! before anything leaves the process, so a slow receiver holds no lock;
//! the attempt is then recorded only if the row's attempt number is still
//! the one leased (the lease is still the caller's). An instance that dies
//! between sending and recording leaves the lease to run out, and the row
//! goes again: at least once, at most once per lease.

use std::time::Duration;

use rand::Rng as _;

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempted {
    /// The endpoint answered 2xx.
    Delivered { status: u16 },
    /// Anything else: a status, a timeout, a refused connection. Tried
    /// again after a pause, until the attempts run out.
    Failed { status: Option<u16>, error: String },
    /// It can never be sent as it is (the recipient is not an address,
    /// the mail cannot be built): dead-lettered at once, trying again
    /// cannot help.
    Permanent { status: Option<u16>, error: String },
}

/// When the relay tries a failed delivery again.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    pub max_attempts: i32,
    pub base: Duration,
    pub max: Duration,
}

impl RetryPolicy {
    /// For a failed attempt number `attempt`: whether it is dead now, and
    /// when it is tried again otherwise.
    pub fn after_failure(&self, attempt: i32, permanent: bool) -> (bool, Duration) {
        (
            permanent || attempt >= self.max_attempts,
            self.backoff(attempt),
        )
    }

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

/// What recording an attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Delivered,
    WillRetry,
    Dead,
    /// The lease had passed to another relay; nothing was written.
    LeaseLost,
}

#[cfg(test)]
mod tests {
    use super::*;

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
