//! Headers every answer carries, set in one layer around the whole router
//! so that no page or answer can forget them.
//!
//! `Cache-Control: no-store` goes on everything dynamic: plain codes (the
//! issued-codes page and its printable cards, the CSV, the `/api/v1`
//! issuing answer) and secrets (API tokens, webhook signing secrets, also
//! when they come back as a one-time message on the next page) must never
//! sit in a browser's or a proxy's cache. Listing the pages that show them
//! would miss the next one, so only static assets (scripts, styles, wasm,
//! images, fonts) are left cacheable; an answer that sets its own
//! `Cache-Control` (learner content: `private, no-store`) keeps it.

use axum::{
    extract::Request,
    http::{HeaderValue, header},
    middleware::Next,
    response::Response,
};

/// Content types that are static assets, never secrets.
const STATIC_ASSETS: &[&str] = &[
    "text/css",
    "text/javascript",
    "application/javascript",
    "application/wasm",
    "image/",
    "font/",
];

pub async fn no_store(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let is_asset = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| STATIC_ASSETS.iter().any(|a| ct.starts_with(a)));
    if !is_asset && !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
