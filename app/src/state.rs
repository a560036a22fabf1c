//! What server functions and SSR pages get from context (ssr only).
//!
//! The server builds one [`AppState`] at startup and provides it to every
//! route and server function through `leptos_routes_with_context`; nothing
//! lives in global statics, so tests can run many apps in one process.

use std::time::Duration;

use std::sync::Arc;

use engine::db::PgPool;
use engine::{
    codes::Keyring,
    coordination::Redis,
    settlement::Settler,
    storage::Storage,
    throttle::{FixedWindow, Limit},
};

#[derive(Clone, Debug)]
pub struct AppState {
    pub pool: PgPool,
    pub redis: Redis,
    pub throttle: FixedWindow,
    pub auth: AuthPolicy,
    pub keyring: Arc<Keyring>,
    pub settler: Settler,
    pub storage: Storage,
    /// Largest accepted upload, in bytes.
    pub max_upload_bytes: u64,
    /// Where learners reach this server (`https://courses.example.com`):
    /// the base of links printed on code cards.
    pub public_origin: Arc<str>,
}

/// Sign-in policy, from the server's configuration.
#[derive(Clone, Debug)]
pub struct AuthPolicy {
    pub sign_in_per_email: Limit,
    pub sign_in_per_ip: Limit,
    pub register_per_ip: Limit,
    /// A session ends this long after sign-in, however active.
    pub absolute_session: Duration,
    /// How many trusted proxies append to `X-Forwarded-For` (0: ignore it);
    /// see [`crate::auth::guard::forwarded_client`].
    pub trusted_proxy_hops: u8,
    /// Code entry attempts per account, per client IP and per share.
    pub code_per_account: Limit,
    pub code_per_ip: Limit,
    pub code_per_share: Limit,
}

impl AppState {
    /// The state provided by the router, or an internal error if a route was
    /// mounted without it (a wiring bug, never a user error).
    pub fn from_context() -> Result<Self, crate::error::AppError> {
        leptos::prelude::use_context::<Self>().ok_or_else(|| {
            crate::error::AppError::internal(&anyhow::anyhow!("AppState missing from context"))
        })
    }
}
