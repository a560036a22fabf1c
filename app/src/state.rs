//! The service layer's handles in a server function or an SSR page (ssr
//! only): the server builds one [`Services`] at startup and provides it to
//! every route and server function through `leptos_routes_with_context`.
//! Nothing lives in global statics, so tests can run many apps in one
//! process.

pub use service::Services;

/// The services the router provided, or an internal error if a route was
/// mounted without them (a wiring bug, never a user error).
pub fn services() -> Result<Services, crate::error::AppError> {
    leptos::prelude::use_context::<Services>().ok_or_else(|| {
        crate::error::AppError::internal(&anyhow::anyhow!("Services missing from context"))
    })
}
