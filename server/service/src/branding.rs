//! What anyone may read of a tenant's branding: its logo, by its upload's
//! id. A logo is public (a course page shows it before sign-in), so each
//! read that reaches the database is counted against the client's address
//! (`throttle.logo_per_ip_per_minute`): a browser keeps a logo for good,
//! so only a client fetching logos over and over meets the limit. An IPv6
//! client is counted by its /64 and its /48, like every per-address limit
//! (`service::throttle::hit_ip`). A logo is never refused because the
//! throttle's store is away: the limit only guards PostgreSQL's load, and a
//! page or a mail without its logo is a broken page.

use std::net::IpAddr;

use anyhow::Context as _;
use engine::{branding::LogoType, coordination::ThrottleScope};
use uuid::Uuid;

use crate::{ServiceError, Services, throttle};

/// The logo `id` (its type and bytes), or `None` when it is not a
/// tenant's current logo. Refused past the client's limit, before the
/// database is asked.
pub async fn logo(
    services: &Services,
    client: IpAddr,
    id: Uuid,
) -> Result<Option<(LogoType, Vec<u8>)>, ServiceError> {
    match throttle::hit_ip(
        services,
        ThrottleScope::LogoIp,
        client,
        services.auth.logo_per_ip,
    )
    .await
    {
        Ok(()) => {}
        // Logged by the throttle; served unthrottled meanwhile.
        Err(ServiceError::Unavailable { .. }) => {}
        Err(refused) => return Err(refused),
    }
    Ok(engine::branding::logo(&services.pool, id)
        .await
        .context("reading a logo")?)
}
