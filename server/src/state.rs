//! The router's state: what every handler extracts (the service layer's
//! handles, the settings) and what Leptos reads its options from. Its own
//! module so that routes depend on it without depending on the router
//! that mounts them (`startup`).

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use service::Services;

use crate::config::Settings;

/// Router state: what handlers extract and Leptos reads its options from.
#[derive(Clone, Debug)]
pub struct ServerState {
    pub leptos_options: LeptosOptions,
    /// Where the page's stylesheet is (its hashed name in a hashed build).
    pub stylesheet: app::Stylesheet,
    /// The use cases' handles; the pages get the same in their context.
    pub services: Services,
    pub settings: Arc<Settings>,
    /// Set once shutdown has begun: `/readyz` answers 503 `draining`.
    pub draining: Arc<std::sync::atomic::AtomicBool>,
}

impl FromRef<ServerState> for LeptosOptions {
    fn from_ref(state: &ServerState) -> Self {
        state.leptos_options.clone()
    }
}
