//! What a tenant's learners' pages load of its branding
//! (`engine::branding`): its logo, and the stylesheet of its accent.
//!
//! Both are cached for good, because both URLs change with what they
//! serve: a logo's URL is its upload's id, the stylesheet's carries its
//! colour and its own version. Neither names a tenant. The stylesheet is a file rather than an inline `style`, which
//! the pages' Content-Security-Policy does not allow; it is built from
//! the colour in its name alone, so it reveals nothing about any tenant.

use std::net::SocketAddr;

use axum::{
    extract::{ConnectInfo, Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use engine::branding::Accent;
use uuid::Uuid;

use crate::{problem::ApiError, state::ServerState};

/// A year: the longest a cache keeps anything.
const FOR_GOOD: &str = "public, max-age=31536000, immutable";

/// `GET /brand/logo/{logo}`: a tenant's current logo (404 for an older
/// one or none). Sent as the type its bytes were found to be, with
/// `nosniff` (on every answer) and a policy that lets nothing in it run.
/// Its id is its `ETag`: a browser that has it gets a 304 without the
/// database being asked. Reads that reach the database are limited per
/// client address (`service::branding`): past it, 429 `rate_limited`.
pub async fn logo(
    State(state): State<ServerState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(logo): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let logo = Uuid::parse_str(&logo).map_err(|_| ApiError::not_found())?;
    let etag = format!("\"{}\"", logo.simple());
    let etag_value =
        HeaderValue::from_str(&etag).map_err(|e| ApiError::from(anyhow::Error::new(e)))?;
    let cached = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag);
    if cached {
        return Ok((
            StatusCode::NOT_MODIFIED,
            [
                (header::ETAG, etag_value),
                (header::CACHE_CONTROL, HeaderValue::from_static(FOR_GOOD)),
            ],
        )
            .into_response());
    }
    let client = service::session::client_ip(&state.services, &peer, &headers);
    let (kind, bytes) = service::branding::logo(&state.services, client, logo)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok((
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind.mime())),
            (header::CACHE_CONTROL, HeaderValue::from_static(FOR_GOOD)),
            (header::ETAG, etag_value),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; sandbox"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("inline"),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `GET /brand/v1/accent/{rrggbb}.css` (six lower-case hex digits, as
/// `app::learner::Brand::stylesheet` writes them; anything else is a
/// 404): sets the pages' `--accent` to that colour, the text on it to
/// whichever of white and near-black reads better, and `--accent-ink`,
/// the accent as text on white, darkened until it reads. `v1` is the
/// stylesheet's version: what it sets may change only under a new one, as
/// caches keep each for a year.
pub async fn accent_css(Path(file): Path<String>) -> Result<Response, ApiError> {
    let accent = file
        .strip_suffix(".css")
        .filter(|hex| {
            hex.len() == 6
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
        .and_then(|hex| Accent::parse(&format!("#{hex}")).ok())
        .ok_or_else(ApiError::not_found)?;
    let css = format!(
        ":root{{--accent:{};--accent-text:{};--accent-ink:{}}}\n",
        accent.as_str(),
        accent.text_colour(),
        accent.ink(),
    );
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static(FOR_GOOD)),
        ],
        css,
    )
        .into_response())
}
