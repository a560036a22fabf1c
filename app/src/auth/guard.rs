//! Who is asking, from a server function's or page's context (ssr only):
//! the request's session, state and address taken from Leptos context and
//! handed to `service::session`, which decides; its outcomes become
//! [`AppError`]s. Also the pages' own session use: one-time messages
//! (flash) for the next page.

use std::net::{IpAddr, SocketAddr};

use engine::{
    accounts::{AccountId, Principal},
    tenants::{Permission, TenantId},
};
use tower_sessions::Session;

use crate::{error::AppError, state::services};

const FLASH_KEY: &str = "flash";

/// The request's session (the session layer always provides one).
pub async fn session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>()
        .await
        .map_err(|error| AppError::internal(&anyhow::anyhow!("no session layer: {error}")))
}

/// A session store failure as the pages show it (an outage: 503 with
/// `Retry-After`).
pub fn session_error(error: tower_sessions::session::Error) -> AppError {
    service::session::session_error(error).into()
}

/// The signed-in principal of this request, if any.
pub async fn current_principal() -> Result<Option<Principal>, AppError> {
    let state = services()?;
    let session = session().await?;
    Ok(service::session::principal_of(&state, &session).await?)
}

/// Any signed-in account (every account may act as a learner).
pub async fn require_learner() -> Result<Principal, AppError> {
    current_principal().await?.ok_or(AppError::Unauthenticated)
}

/// A signed-in member of `tenant` whose role allows `permission`.
/// Everyone else, including members of other tenants, gets `Forbidden`,
/// whether or not the tenant exists.
pub async fn require_member(
    tenant: TenantId,
    permission: Permission,
) -> Result<Principal, AppError> {
    let state = services()?;
    let session = session().await?;
    Ok(service::session::member_of(&state, &session, tenant, permission).await?)
}

/// Re-stamps this request's session after the epoch moved (password
/// change), keeping it signed in while every other one ends.
pub async fn restamp(account: AccountId, epoch: i64) -> Result<(), AppError> {
    let session = session().await?;
    Ok(service::session::restamp(&session, account, epoch).await?)
}

/// Ends this session (its record is deleted and its cookie cleared).
pub async fn sign_out() -> Result<(), AppError> {
    Ok(service::session::sign_out(&session().await?).await?)
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
/// outermost of `server.trusted_proxy_hops` proxies appended
/// (`service::session::client_ip`).
pub async fn client_ip() -> Result<IpAddr, AppError> {
    let state = services()?;
    let parts = leptos::prelude::use_context::<http::request::Parts>()
        .ok_or_else(|| AppError::internal(&anyhow::anyhow!("request parts missing")))?;
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
        .ok_or_else(|| AppError::internal(&anyhow::anyhow!("no connect info")))?;
    Ok(service::session::client_ip(&state, &peer, &parts.headers))
}
