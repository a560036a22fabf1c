//! The versioned JSON API (`/api/v1`), for API callers and tests: the same
//! domain functions the pages use, with session-cookie authentication.

pub mod admin;
mod auth;
pub mod error;
pub mod learner;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    routing::{get, post},
};

use crate::startup::ServerState;

pub fn router() -> Router<ServerState> {
    Router::new()
        .route("/api/v1/auth/register", post(auth::register))
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route(
            "/api/v1/tenants/{tenant_id}/shares",
            post(admin::create_share),
        )
        .route("/api/v1/shares/{share_id}/status", post(admin::set_status))
        .route(
            "/api/v1/shares/{share_id}/resources",
            // The storage layer enforces `storage.max_upload_bytes` while streaming.
            post(admin::upload_resource).layer(DefaultBodyLimit::disable()),
        )
        .route(
            "/api/v1/shares/{share_id}/codes",
            post(admin::issue_codes).get(admin::list_codes),
        )
        .route("/api/v1/codes/{code_id}/revoke", post(admin::revoke_code))
        .route("/api/v1/codes/{code_id}/unbind", post(admin::unbind_code))
        .route("/api/v1/s/{slug}", get(learner::share))
        .route("/api/v1/s/{slug}/code", post(learner::enter_code))
        .route(
            "/api/v1/s/{slug}/resources/{resource_id}/content",
            get(learner::content),
        )
}
