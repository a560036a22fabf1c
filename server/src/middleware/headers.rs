//! Headers every answer carries, set in one layer around the whole router
//! so that no page or answer can forget them.
//!
//! [`security`] sets, on every answer: `X-Frame-Options: DENY` (with the
//! CSP's `frame-ancestors 'none'`: no site may frame a page, so no
//! clickjacking of the console), `X-Content-Type-Options: nosniff`,
//! `Referrer-Policy: strict-origin-when-cross-origin` (share links and
//! tenant ids stay on our origin), and `Strict-Transport-Security` when
//! `server.public_url` is https (over plain HTTP it would be ignored, or
//! lock a development host out). Pages rendered by Leptos set their own
//! Content-Security-Policy with the render's nonce (`app::shell`): the
//! hydration script and every inline script Leptos writes carry it, and
//! nothing without it runs. Other answers get [`NON_PAGE_CSP`] (no
//! scripts at all). An answer with its own CSP or framing rule keeps it:
//! learner pages are served sandboxed and framed by our own resource page.
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
    extract::{Request, State},
    http::{HeaderValue, header},
    middleware::Next,
    response::Response,
};

/// The policy of answers that are not Leptos pages (JSON, CSV, the API
/// docs): styles from our origin, no scripts, never framed.
pub const NON_PAGE_CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// What [`security`] needs to know.
#[derive(Debug, Clone, Copy)]
pub struct Security {
    /// `server.public_url` is https: send HSTS.
    pub https: bool,
}

pub async fn security(State(config): State<Security>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(NON_PAGE_CSP),
        );
    }
    if !headers.contains_key(header::X_FRAME_OPTIONS) {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("strict-origin-when-cross-origin"),
    );
    if config.https {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    response
}

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
