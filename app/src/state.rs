//! What server functions and SSR pages get from context (ssr only): the
//! service layer's handles ([`service::Services`]), which the server builds
//! once at startup and provides to every route and server function through
//! `leptos_routes_with_context`. Nothing lives in global statics, so tests
//! can run many apps in one process.
//!
//! [`AppState`] derefs to the services, so `state.pool` and
//! `service::learner::open(&state, …)` read as they did when the state
//! lived here.

use std::ops::Deref;

use service::Services;

#[derive(Clone, Debug)]
pub struct AppState(Services);

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(services)
    }

    /// The state provided by the router, or an internal error if a route was
    /// mounted without it (a wiring bug, never a user error).
    pub fn from_context() -> Result<Self, crate::error::AppError> {
        leptos::prelude::use_context::<Self>().ok_or_else(|| {
            crate::error::AppError::internal(&anyhow::anyhow!("AppState missing from context"))
        })
    }
}

impl Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}
