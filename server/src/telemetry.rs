//! Structured logs.
//!
//! One subscriber for the process, pretty for people or JSON for log
//! shippers. Each request gets a span carrying its `x-request-id`, so every
//! line logged while serving it can be found together.

use http::Request;
use tower_http::{request_id::RequestId, trace::MakeSpan};
use tracing::Span;
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

use crate::config::{LogFormat, LogSettings};

/// Installs the global subscriber (`RUST_LOG` overrides the configured
/// filter). Returns an error if one is already installed.
pub fn init(settings: &LogSettings) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.filter))
        .map_err(|error| anyhow::anyhow!("invalid log filter: {error}"))?;
    let registry = tracing_subscriber::registry().with(filter);
    match settings.format {
        LogFormat::Json => registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true),
            )
            .try_init()?,
        LogFormat::Pretty => registry.with(fmt::layer().compact()).try_init()?,
    }
    Ok(())
}

/// Opens the span of one HTTP request.
#[derive(Clone, Copy, Debug)]
pub struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &Request<B>) -> Span {
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .and_then(|id| id.header_value().to_str().ok())
            .unwrap_or("-");
        // `principal` and `tenant` are filled in once the request is
        // authenticated (`app::auth::guard`); settlement spans inside add
        // the share.
        tracing::info_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
            request_id = %request_id,
            principal = tracing::field::Empty,
            tenant = tracing::field::Empty,
        )
    }
}
