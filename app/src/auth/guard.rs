//! Who is asking (ssr only): the session, its principal, and the
//! authorisation checks every server function and route uses.
//!
//! The principal id always comes from the server-side session, never from
//! the client. A session names an account and the account's
//! `session_epoch` at sign-in; every check re-reads the account, so a
//! disabled account, a password change or "sign out everywhere" ends the
//! session at once, on every instance.

use std::net::{IpAddr, SocketAddr};

use engine::{
    accounts::{self, AccountId, Principal, SignedIn},
    tenants::{self, TenantId},
};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use crate::{error::AppError, state::AppState};

const AUTH_KEY: &str = "auth";
const FLASH_KEY: &str = "flash";

/// What the session stores about its sign-in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
struct SessionAuth {
    account: uuid::Uuid,
    epoch: i64,
    /// Unix seconds; the absolute lifetime counts from here.
    signed_in_at: i64,
}

/// The request's session (the session layer always provides one).
pub async fn session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>()
        .await
        .map_err(|error| AppError::internal(&anyhow::anyhow!("no session layer: {error}")))
}

fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Sessions live in Redis: when it cannot answer, the request is refused
/// as a momentary outage (503 with `Retry-After`), like every other Redis
/// failure, never as a bug on our side.
pub fn session_error(error: tower_sessions::session::Error) -> AppError {
    match error {
        tower_sessions::session::Error::Store(_) => {
            tracing::warn!(
                error = format!("{:#}", anyhow::Error::new(error)),
                "session store unavailable"
            );
            AppError::Unavailable {
                retry_after_secs: 2,
            }
        }
        // A record we cannot read is a bug, not an outage: no "retry".
        other => AppError::internal(&anyhow::Error::new(other).context("session record")),
    }
}

/// The signed-in principal of this request, if any (leptos context).
pub async fn current_principal() -> Result<Option<Principal>, AppError> {
    let state = AppState::from_context()?;
    let session = session().await?;
    principal_of(&state, &session).await
}

/// The signed-in principal of `session`, if any. Ends (and forgets)
/// sessions that are past their absolute lifetime or whose account revoked
/// them.
pub async fn principal_of(
    state: &AppState,
    session: &Session,
) -> Result<Option<Principal>, AppError> {
    let Some(auth) = session
        .get::<SessionAuth>(AUTH_KEY)
        .await
        .map_err(session_error)?
    else {
        return Ok(None);
    };
    let age = now_unix().saturating_sub(auth.signed_in_at);
    let max_age = i64::try_from(state.auth.absolute_session.as_secs()).unwrap_or(i64::MAX);
    let principal = if age > max_age {
        None
    } else {
        accounts::session_principal(&state.pool, AccountId(auth.account), auth.epoch)
            .await
            .map_err(|e| AppError::internal(&e))?
    };
    match &principal {
        // The request's span names who is acting (an id, never an email).
        Some(p) => {
            tracing::Span::current().record("principal", tracing::field::display(p.id.0));
        }
        None => session.flush().await.map_err(session_error)?,
    }
    Ok(principal)
}

/// Any signed-in account (every account may act as a learner).
pub async fn require_learner() -> Result<Principal, AppError> {
    current_principal().await?.ok_or(AppError::Unauthenticated)
}

/// A signed-in administrator of `tenant`. Everyone else, including admins
/// of other tenants, gets `Forbidden`, whether or not the tenant exists.
pub async fn require_admin(tenant: TenantId) -> Result<Principal, AppError> {
    let state = AppState::from_context()?;
    let session = session().await?;
    admin_of(&state, &session, tenant).await
}

/// [`require_admin`] with explicit state and session (axum handlers).
pub async fn admin_of(
    state: &AppState,
    session: &Session,
    tenant: TenantId,
) -> Result<Principal, AppError> {
    let principal = principal_of(state, session)
        .await?
        .ok_or(AppError::Unauthenticated)?;
    if tenants::is_admin(&state.pool, tenant, principal.id)
        .await
        .map_err(|e| AppError::internal(&e))?
    {
        tracing::Span::current().record("tenant", tracing::field::display(tenant.0));
        Ok(principal)
    } else {
        Err(AppError::Forbidden)
    }
}

/// Starts a signed-in session: a new session id (no fixation), stamped with
/// the account's current session epoch.
pub async fn sign_in_session(session: &Session, signed_in: &SignedIn) -> Result<(), AppError> {
    session.cycle_id().await.map_err(session_error)?;
    stamp(session, signed_in.principal.id, signed_in.session_epoch).await
}

/// Re-stamps the current session after the epoch moved (password change),
/// keeping this session signed in while every other one ends.
pub async fn restamp(account: AccountId, epoch: i64) -> Result<(), AppError> {
    let session = session().await?;
    session.cycle_id().await.map_err(session_error)?;
    stamp(&session, account, epoch).await
}

async fn stamp(session: &Session, account: AccountId, epoch: i64) -> Result<(), AppError> {
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

/// Ends this session (its record is deleted and its cookie cleared).
pub async fn sign_out() -> Result<(), AppError> {
    sign_out_session(&session().await?).await
}

pub async fn sign_out_session(session: &Session) -> Result<(), AppError> {
    session.flush().await.map_err(session_error)
}

/// Whether this request is a plain HTML form post (no JavaScript): its
/// answer is a redirect, so a message must travel as a flash.
pub fn from_plain_form() -> bool {
    leptos::prelude::use_context::<http::request::Parts>().is_some_and(|parts| {
        parts.method == http::Method::POST
            && parts
                .headers
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/html"))
    })
}

/// Leaves a one-time message for the next page.
pub async fn set_flash(flash: &crate::auth::Flash) -> Result<(), AppError> {
    flash_into(&session().await?, flash).await
}

/// [`set_flash`] with an explicit session (axum handlers).
pub async fn flash_into(session: &Session, flash: &crate::auth::Flash) -> Result<(), AppError> {
    session
        .insert(FLASH_KEY, flash)
        .await
        .map_err(session_error)
}

/// Takes (and removes) the pending one-time message.
pub async fn take_flash() -> Result<Option<crate::auth::Flash>, AppError> {
    let session = session().await?;
    // Reading first avoids marking every session modified on every page.
    if session
        .get_value(FLASH_KEY)
        .await
        .map_err(session_error)?
        .is_none()
    {
        return Ok(None);
    }
    session.remove(FLASH_KEY).await.map_err(session_error)
}

/// The client's IP: the socket peer, or the `X-Forwarded-For` entry the
/// outermost of `server.trusted_proxy_hops` proxies appended.
pub async fn client_ip() -> Result<IpAddr, AppError> {
    let state = AppState::from_context()?;
    let parts = leptos::prelude::use_context::<http::request::Parts>()
        .ok_or_else(|| AppError::internal(&anyhow::anyhow!("request parts missing")))?;
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
        .ok_or_else(|| AppError::internal(&anyhow::anyhow!("no connect info")))?;
    Ok(client_ip_of(&state, &peer, &parts.headers))
}

/// The client's address: the one the trusted proxies vouch for
/// ([`forwarded_client`]), else the TCP peer.
pub fn client_ip_of(state: &AppState, peer: &SocketAddr, headers: &http::HeaderMap) -> IpAddr {
    forwarded_client(state.auth.trusted_proxy_hops, headers).unwrap_or_else(|| peer.ip())
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
