//! Phase 3 around the settlement transaction: what [`Settler::settle`] does
//! before and after it.
//!
//! A learner with no code pending (a returning one) goes straight to the
//! transaction, whose binding decides. Otherwise `reserve.lua` takes the
//! code and the learner for this attempt; while another attempt holds
//! either, the request waits on the one schedule of [`super::patience`] (or
//! answers `Busy` at once, unless the learner turns out to be bound
//! already), and `release.lua` frees the reservation afterwards, committed
//! or not. If Redis does not answer, a learner bound already is served
//! from PostgreSQL whatever the failure policy. This
//! file is the coordination in Redis; the invariants in PostgreSQL are
//! `transaction.rs`.

use std::time::Duration;

use sqlx::PgPool;
use time::OffsetDateTime;
use tracing::Instrument as _;

use super::{
    Counting, Grant, SettlementError, SettlementRequest, binding_of,
    options::{FailurePolicy, SettlementOptions, SettlementProbe},
    patience::{BUSY_WAITS_MS, Holder},
    transaction::classify,
};
use crate::{
    coordination::Redis,
    reservation::{Reservation, ReservationKeys, Reserver},
};

/// Settles first and returning accesses: owns what it settles with (the
/// pool of the authority, the Redis that coordinates), so a caller hands it
/// a request and nothing else.
#[derive(Debug, Clone)]
pub struct Settler {
    pub(super) pool: PgPool,
    redis: Redis,
    reserver: Reserver,
    pub(super) options: SettlementOptions,
}

impl Settler {
    pub fn new(pool: PgPool, redis: Redis, options: SettlementOptions) -> Self {
        Self {
            pool,
            redis,
            reserver: Reserver::new(),
            options,
        }
    }

    /// Phase 3: decides access to `request.resource`, binding the pending
    /// code on a first access.
    pub async fn settle(&self, request: &SettlementRequest) -> Result<Grant, SettlementError> {
        let span = tracing::info_span!(
            "settle",
            tenant = %request.share.tenant_id,
            share = %request.share.id,
            principal = %request.principal.0,
            outcome = tracing::field::Empty,
        );
        let result = self
            .settle_unmeasured(request)
            .instrument(span.clone())
            .await;
        crate::metrics::settlement(result.as_ref().map(|g| (g.bound_now, g.replayed)));
        span.record(
            "outcome",
            match &result {
                Ok(grant) if grant.bound_now => "bound",
                Ok(_) => "granted",
                Err(_) => "refused",
            },
        );
        result
    }

    async fn settle_unmeasured(
        &self,
        request: &SettlementRequest,
    ) -> Result<Grant, SettlementError> {
        let (pool, redis) = (&self.pool, &self.redis);
        let share = &request.share;
        if let Some(reason) = share.unavailable_because(OffsetDateTime::now_utc()) {
            return Err(SettlementError::ShareUnavailable(reason));
        }
        // No code pending: a returning learner (or nobody), and the
        // database binding decides in the one call, no Redis. (Without a
        // binding it answers `CodeRequired`.)
        let Some(code) = request.pending_code else {
            return self.run_transaction(request).await;
        };
        // A code pending and this request may not bind (another site): only
        // a binding it already has serves it, without Redis.
        if request.counting == Counting::LiveGrantOnly {
            return self.run_transaction(request).await;
        }
        let keys = ReservationKeys {
            code: redis
                .keys()
                .reservation_code(share.tenant_id.0, share.id.0, code),
            user: redis
                .keys()
                .reservation_user(share.tenant_id.0, share.id.0, request.principal.0),
        };
        // Request ids are chosen by callers: scope the owner to the learner
        // so that two learners picking the same id never share a reservation.
        let owner = format!("{}:{}", request.principal.0, request.request_id.as_str());
        let owner = owner.as_str();
        // One wait schedule for every kind of "busy", owned here: a
        // request never waits inside another wait.
        let mut waited = 0;
        let reserved = loop {
            self.count(|p| &p.reservations);
            let answer = self
                .reserver
                .reserve(redis, &keys, owner, self.options.reservation_ttl)
                .await;
            let holder = match answer {
                Ok(Reservation::Reserved) => break true,
                // The learner's own other request (a video player's Range
                // requests): it takes milliseconds, then this one takes the
                // returning-learner path.
                Ok(Reservation::UserBusy) => Holder::OwnRequest,
                // Someone else's attempt at this code: a person waits for
                // the definite answer ("already used"); an API client
                // hears "busy" at once and retries with its request id, so
                // a hot code's losers stay off PostgreSQL.
                Ok(Reservation::CodeHeld) => Holder::SomeoneElse,
                // A learner who is bound already (a code left pending from
                // an earlier session) needs no reservation: Redis being
                // away never stops a returning learner.
                Err(_)
                    if binding_of(pool, share, request.principal)
                        .await
                        .map_err(classify)?
                        .is_some() =>
                {
                    return self.run_transaction(request).await;
                }
                Err(error) => match self.options.failure_policy {
                    FailurePolicy::FailClosed => {
                        tracing::warn!(
                            error = format!("{error:#}"),
                            "reservation failed; refusing (fail-closed)"
                        );
                        return Err(SettlementError::Unavailable);
                    }
                    FailurePolicy::DbOnly => {
                        tracing::warn!(
                            error = format!("{error:#}"),
                            "reservation failed; settling in PostgreSQL alone"
                        );
                        break false;
                    }
                },
            };
            let Some(wait) = BUSY_WAITS_MS
                .get(waited)
                .filter(|_| waited < request.patience.waits(holder))
            else {
                // A learner bound already (a code left pending from an
                // earlier session) is never "busy" on that code.
                if binding_of(pool, share, request.principal)
                    .await
                    .map_err(classify)?
                    .is_some()
                {
                    return self.run_transaction(request).await;
                }
                return Err(SettlementError::Busy);
            };
            waited += 1;
            tokio::time::sleep(Duration::from_millis(*wait)).await;
            if binding_of(pool, share, request.principal)
                .await
                .map_err(classify)?
                .is_some()
            {
                return self.run_transaction(request).await;
            }
        };
        let result = self.run_transaction(request).await;
        if reserved && let Err(error) = self.reserver.release(redis, &keys, owner).await {
            // The TTL cleans up; the settlement's outcome stands.
            tracing::warn!(
                error = format!("{error:#}"),
                "releasing a reservation failed"
            );
        }
        result
    }

    pub(super) fn count(&self, which: impl Fn(&SettlementProbe) -> &std::sync::atomic::AtomicU64) {
        if let Some(probe) = &self.options.probe {
            which(probe).fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}
