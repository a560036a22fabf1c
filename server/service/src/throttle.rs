//! One attempt counted against a limit, for every use case that has one
//! (sign-in, registration, password change, code entry): the engine's
//! fixed window, its refusal as a typed [`ServiceError::Throttled`] that
//! names the scope (each adapter says it in its own words), and a Redis
//! failure as a momentary outage.

use engine::{
    coordination::ThrottleScope,
    throttle::{Decision, Limit},
};

use crate::{ServiceError, Services};

/// How many /64s' worth of attempts an IPv6 /48 has
/// ([`engine::throttle::site_subject`]).
pub const SITE_FACTOR: u32 = 16;

/// How many networks' windows of sign-in attempts one address has in all
/// (the per-email backstop beside the per-email-and-network window).
pub const EMAIL_NETWORKS: u32 = 10;

/// How long a caller is told to wait when the throttle's store is away.
const STORE_AWAY_RETRY_SECS: u64 = 5;

/// Counts one attempt of `scope` by `subject`; refuses past `limit` with
/// the time to wait (whole seconds, never 0).
pub async fn hit(
    services: &Services,
    scope: ThrottleScope,
    subject: &str,
    limit: Limit,
) -> Result<(), ServiceError> {
    let key = services.redis.keys().throttle(scope, subject);
    match services.throttle.hit(&services.redis, &key, limit).await {
        Ok(Decision::Allowed { .. }) => Ok(()),
        Ok(Decision::Refused { retry_after }) => {
            engine::metrics::throttled(scope.as_str());
            Err(ServiceError::Throttled {
                scope,
                limit: limit.max,
                retry_after_secs: retry_after.as_secs().max(1),
            })
        }
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "throttle unavailable");
            Err(ServiceError::Unavailable {
                retry_after_secs: STORE_AWAY_RETRY_SECS,
            })
        }
    }
}

/// Counts one attempt of `scope` from the client address `ip`: by the
/// address (an IPv6 client by its /64) within `limit`, and, for an IPv6
/// client, by its /48 too, within [`SITE_FACTOR`] times `limit`.
pub async fn hit_ip(
    services: &Services,
    scope: ThrottleScope,
    ip: std::net::IpAddr,
    limit: Limit,
) -> Result<(), ServiceError> {
    hit(services, scope, &engine::throttle::ip_subject(ip), limit).await?;
    if let Some(site) = engine::throttle::site_subject(ip) {
        let site_limit = Limit {
            max: limit.max.saturating_mul(SITE_FACTOR),
            ..limit
        };
        hit(services, scope, &site, site_limit).await?;
    }
    Ok(())
}

/// Counts one event of `scope` by `subject` as a signal, never a refusal:
/// when a window reaches `limit`, the operator hears it once (a metric and
/// a log line naming the subject). A store that cannot count loses the
/// signal, never the request.
pub async fn note(services: &Services, scope: ThrottleScope, subject: &str, limit: Limit) {
    let key = services.redis.keys().throttle(scope, subject);
    match services.throttle.hit(&services.redis, &key, limit).await {
        Ok(Decision::Allowed { count }) if count == limit.max => {
            engine::metrics::signal_raised(scope.as_str());
            tracing::warn!(
                scope = scope.as_str(),
                subject,
                limit = limit.max,
                "a signal reached its limit in this window"
            );
        }
        Ok(_) => {}
        Err(error) => {
            tracing::warn!(
                error = format!("{error:#}"),
                "a signal could not be counted"
            );
        }
    }
}
