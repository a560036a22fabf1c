//! What server functions and SSR pages get from context (ssr only).
//!
//! The server builds one [`AppState`] at startup and provides it to every
//! route and server function through `leptos_routes_with_context`; nothing
//! lives in global statics, so tests can run many apps in one process.

use engine::coordination::Redis;
use sqlx::PgPool;

#[derive(Clone, Debug)]
pub struct AppState {
    pub pool: PgPool,
    pub redis: Redis,
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
