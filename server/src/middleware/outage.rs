//! A session store outage is a momentary outage, never a bug on our side.
//!
//! Sessions live in Redis. The session layer saves a changed session after
//! the handler has answered, and when Redis cannot take it (stopped,
//! paused, failing over) it replaces the answer with a bare 500. Everything
//! the handler did is already decided in PostgreSQL (a binding committed is
//! found again by the retry), so the honest answer is the documented one:
//! 503 with `Retry-After`, like every other Redis failure. Our own 500s
//! always carry a body with a content type; the session layer's has none,
//! which is how this layer, wrapped around it, tells them apart.

use axum::{
    extract::Request,
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse as _, Response},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;

pub async fn session_store_failures(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let bare = response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && !response.headers().contains_key(header::CONTENT_TYPE);
    if !bare {
        return response;
    }
    tracing::warn!("session store unavailable: answered 503");
    ApiError::new(
        ErrorKind::Unavailable,
        "unavailable",
        "the service is busy, please try again in a moment",
    )
    .into_response()
}
