//! Who is asking: the sign-in a session carries, the checks every use case
//! starts with, and the client's address.
//!
//! The principal id always comes from the server-side session, never from
//! the client. A session names an account and the account's
//! `session_epoch` at sign-in; every check re-reads the account, so a
//! disabled account, a password change or "sign out everywhere" ends the
//! session at once, on every instance. Sessions live in Redis: a store
//! that cannot answer is a momentary outage (503 with `Retry-After`), never
//! a bug on our side.

use std::net::{IpAddr, SocketAddr};

use engine::{
    accounts::{self, AccountId, Principal, SignedIn},
    shares::{Share, ShareId},
    tenants::{self, Permission, Role, TenantId},
};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use crate::{ServiceError, Services};

const AUTH_KEY: &str = "auth";

/// How long a caller is told to wait when the session store is away.
const STORE_AWAY_RETRY_SECS: u64 = 2;

/// What the session stores about its sign-in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct SessionAuth {
    account: uuid::Uuid,
    epoch: i64,
    /// Unix seconds; the absolute lifetime counts from here.
    signed_in_at: i64,
}

fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// A session store failure as an outcome: Redis away is `Unavailable`; a
/// record we cannot read is a bug, not an outage (no "retry").
pub fn session_error(error: tower_sessions::session::Error) -> ServiceError {
    match error {
        tower_sessions::session::Error::Store(_) => {
            tracing::warn!(
                error = format!("{:#}", anyhow::Error::new(error)),
                "session store unavailable"
            );
            ServiceError::Unavailable {
                retry_after_secs: STORE_AWAY_RETRY_SECS,
            }
        }
        other => ServiceError::Unexpected(anyhow::Error::new(other).context("session record")),
    }
}

/// The signed-in principal of `session`, if any. Ends (and forgets)
/// sessions that are past their absolute lifetime or whose account revoked
/// them.
pub async fn principal_of(
    services: &Services,
    session: &Session,
) -> Result<Option<Principal>, ServiceError> {
    let Some(Claim { account, epoch }) = claim_of(services, session).await? else {
        return Ok(None);
    };
    let principal = accounts::session_principal(&services.pool, account, epoch).await?;
    match &principal {
        // The request's span names who is acting (an id, never an email).
        Some(p) => {
            crate::request_span::record("principal", p.id.0);
        }
        None => session.flush().await.map_err(session_error)?,
    }
    Ok(principal)
}

/// Who a session says is signed in, not yet checked against the account:
/// the account and the session epoch it was signed in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub account: AccountId,
    pub epoch: i64,
}

/// The [`Claim`] of `session`, if it is signed in and within its absolute
/// lifetime, **without reading the account**: for a caller whose own
/// single read or call checks the epoch (the bytes route,
/// `crate::content`; an opening, whose settlement checks it). Everyone
/// else uses [`principal_of`].
pub async fn claim_of(
    services: &Services,
    session: &Session,
) -> Result<Option<Claim>, ServiceError> {
    let Some(auth) = session
        .get::<SessionAuth>(AUTH_KEY)
        .await
        .map_err(session_error)?
    else {
        return Ok(None);
    };
    let age = now_unix().saturating_sub(auth.signed_in_at);
    let max_age = i64::try_from(services.auth.absolute_session.as_secs()).unwrap_or(i64::MAX);
    if age > max_age {
        session.flush().await.map_err(session_error)?;
        return Ok(None);
    }
    Ok(Some(Claim {
        account: AccountId(auth.account),
        epoch: auth.epoch,
    }))
}

/// [`claim_of`], or `Unauthenticated` when nobody is signed in.
pub async fn claimed(services: &Services, session: &Session) -> Result<Claim, ServiceError> {
    claim_of(services, session)
        .await?
        .ok_or(ServiceError::Unauthenticated)
}

/// Ends a session whose account moved past its epoch (or is gone), as
/// [`principal_of`] does: the caller answers `Unauthenticated`.
pub async fn ended(session: &Session) -> Result<ServiceError, ServiceError> {
    session.flush().await.map_err(session_error)?;
    Ok(ServiceError::Unauthenticated)
}

/// Any signed-in account (every account may act as a learner).
pub async fn learner_of(services: &Services, session: &Session) -> Result<Principal, ServiceError> {
    principal_of(services, session)
        .await?
        .ok_or(ServiceError::Unauthenticated)
}

/// A signed-in member of `tenant` whose role allows `permission`.
/// Everyone else, including members of other tenants and members whose
/// role falls short, gets `Forbidden`, whether or not the tenant exists.
pub async fn member_of(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    permission: Permission,
) -> Result<Principal, ServiceError> {
    Ok(membership(services, session, tenant, permission).await?.0)
}

/// [`member_of`], with the member's role (pages show what it allows).
pub async fn membership(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    permission: Permission,
) -> Result<(Principal, Role), ServiceError> {
    let principal = learner_of(services, session).await?;
    match tenants::role_of(&services.pool, tenant, principal.id).await? {
        Some(role) if role.allows(permission) => {
            crate::request_span::record("tenant", tenant.0);
            Ok((principal, role))
        }
        _ => Err(ServiceError::Forbidden),
    }
}

/// Starts a signed-in session: a new session id (no fixation), stamped with
/// the account's current session epoch.
pub async fn sign_in(session: &Session, signed_in: &SignedIn) -> Result<(), ServiceError> {
    session.cycle_id().await.map_err(session_error)?;
    stamp(session, signed_in.principal.id, signed_in.session_epoch).await
}

/// Re-stamps a session after the account's epoch moved (password change),
/// keeping it signed in while every other one ends.
pub async fn restamp(
    session: &Session,
    account: AccountId,
    epoch: i64,
) -> Result<(), ServiceError> {
    session.cycle_id().await.map_err(session_error)?;
    stamp(session, account, epoch).await
}

async fn stamp(session: &Session, account: AccountId, epoch: i64) -> Result<(), ServiceError> {
    session
        .insert(
            AUTH_KEY,
            SessionAuth {
                account: account.0,
                epoch,
                signed_in_at: now_unix(),
            },
        )
        .await
        .map_err(session_error)
}

/// Where this browser was going when it registered `email`: kept in the
/// session, not with the mailed link, when it carries a query (an
/// invitation's or a transfer's link has its secret there, and secrets
/// are never stored). The link finished in this browser comes back here.
const REGISTRATION_NEXT_KEY: &str = "registration_next";

#[derive(Serialize, Deserialize)]
struct RegistrationNext {
    email: String,
    next: String,
}

pub async fn remember_registration_next(
    session: &Session,
    email: &str,
    next: &str,
) -> Result<(), ServiceError> {
    session
        .insert(
            REGISTRATION_NEXT_KEY,
            RegistrationNext {
                email: email.to_owned(),
                next: next.to_owned(),
            },
        )
        .await
        .map_err(session_error)
}

/// Takes the path this browser registered `email` from, if it did.
pub async fn take_registration_next(
    session: &Session,
    email: &str,
) -> Result<Option<String>, ServiceError> {
    let kept = session
        .remove::<RegistrationNext>(REGISTRATION_NEXT_KEY)
        .await
        .map_err(session_error)?;
    Ok(kept.filter(|k| k.email == email).map(|k| k.next))
}

/// Ends a session (its record is deleted and its cookie cleared).
pub async fn sign_out(session: &Session) -> Result<(), ServiceError> {
    session.flush().await.map_err(session_error)
}

/// The client's address: the one the trusted proxies vouch for
/// ([`forwarded_client`]), else the TCP peer.
pub fn client_ip(services: &Services, peer: &SocketAddr, headers: &http::HeaderMap) -> IpAddr {
    forwarded_client(services.auth.trusted_proxy_hops, headers).unwrap_or_else(|| peer.ip())
}

/// The client address behind `hops` trusted proxies: the `hops`-th entry
/// from the right of every `X-Forwarded-For` line joined in order.
///
/// Each proxy appends the address it saw, either to the existing line or
/// as a line of its own; both read the same once joined. The rightmost
/// `hops` entries were written by our proxies, so the `hops`-th from the
/// right is the address the outermost one saw; everything left of it is
/// the client's claim. Fewer entries than `hops` mean the request did not
/// come through every proxy (one was bypassed), so no entry can be
/// trusted: the leftmost may be the client's own invention. `None` (use
/// the TCP peer) when `hops` is 0, the chain is shorter than `hops`, or the
/// chosen entry is not an address.
pub fn forwarded_client(hops: u8, headers: &http::HeaderMap) -> Option<IpAddr> {
    if hops == 0 {
        return None;
    }
    let lines: Vec<String> = headers
        .get_all("x-forwarded-for")
        .iter()
        // Lossy, not skipped: a line with a stray byte from the client may
        // also carry our proxy's entry at its end.
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    let entries: Vec<&str> = lines
        .iter()
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .collect();
    let Some(at) = entries.len().checked_sub(usize::from(hops)) else {
        tracing::warn!(
            entries = entries.len(),
            trusted_proxy_hops = hops,
            "X-Forwarded-For is shorter than server.trusted_proxy_hops: a proxy was bypassed \
             or the setting is too high; using the TCP peer"
        );
        return None;
    };
    let chosen = entries.get(at)?;
    chosen
        .parse::<IpAddr>()
        .or_else(|_| chosen.parse::<SocketAddr>().map(|s| s.ip()))
        .ok()
}

/// The signed-in member of `tenant` allowed `permission`, their role, and
/// its share `share`: 401/403 for everyone else, 404 for a share of another tenant
/// (ids are not secrets, but tenants stay apart).
pub async fn member_share(
    services: &Services,
    session: &Session,
    tenant: TenantId,
    share: ShareId,
    permission: Permission,
) -> Result<(Principal, Role, Share), ServiceError> {
    let (member, role) = membership(services, session, tenant, permission).await?;
    let share = engine::shares::get_in(&services.pool, tenant, share)
        .await?
        .ok_or(ServiceError::NotFound)?;
    Ok((member, role, share))
}

#[cfg(test)]
mod tests {
    use super::forwarded_client;

    fn headers(lines: &[&str]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for line in lines {
            headers.append("x-forwarded-for", line.parse().expect("header value"));
        }
        headers
    }

    fn ip(s: &str) -> Option<std::net::IpAddr> {
        Some(s.parse().expect("ip"))
    }

    #[test]
    fn the_nth_address_from_the_right_across_all_lines() {
        let forged_then_proxy = headers(&["6.6.6.6", "203.0.113.7"]);
        assert_eq!(forwarded_client(0, &forged_then_proxy), None, "0: ignored");
        assert_eq!(forwarded_client(1, &forged_then_proxy), ip("203.0.113.7"));
        let one_line = headers(&["6.6.6.6, 7.7.7.7,203.0.113.7 , 10.0.0.2"]);
        assert_eq!(forwarded_client(1, &one_line), ip("10.0.0.2"));
        assert_eq!(forwarded_client(2, &one_line), ip("203.0.113.7"));
        let mixed = headers(&["6.6.6.6, 203.0.113.7", "10.0.0.2"]);
        assert_eq!(forwarded_client(2, &mixed), ip("203.0.113.7"));
        assert_eq!(
            forwarded_client(3, &headers(&["6.6.6.6", "203.0.113.7"])),
            None,
            "a shorter chain: a proxy was bypassed, no entry is trusted"
        );
        assert_eq!(
            forwarded_client(2, &headers(&["6.6.6.6", "203.0.113.7"])),
            ip("6.6.6.6"),
            "exactly as many entries as hops: the leftmost is what the outermost saw"
        );
        assert_eq!(
            forwarded_client(1, &headers(&["6.6.6.6", "[2001:db8::1]:443"])),
            ip("2001:db8::1")
        );
        assert_eq!(forwarded_client(1, &headers(&[])), None, "no header");
        assert_eq!(forwarded_client(1, &headers(&["unknown"])), None);
        assert_eq!(forwarded_client(1, &headers(&[" , "])), None);
    }
}
