//! `GET /metrics` (Prometheus text format) and the HTTP request metrics.
//!
//! The scrape is protected by `metrics.token` (`Authorization: Bearer …`);
//! without a token configured the route does not exist, so a public
//! deployment never leaks its numbers by accident. Gauges that describe
//! shared state (pool, Redis, outbox backlog) are read at scrape time, so
//! every instance reports the same backlog and its own pool.

use std::{sync::OnceLock, time::Instant};

use axum::{
    extract::{MatchedPath, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use secrecy::ExposeSecret as _;
use sha2::{Digest as _, Sha256};

use crate::state::ServerState;

/// The process's recorder. The `metrics` facade is process-wide by design,
/// so the recorder is installed once and every app built in this process
/// (tests build many) renders from it. Installed only when `/metrics` is
/// served (a token is configured): otherwise nothing is recorded at all.
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            const LATENCY: &[f64] = &[
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ];
            let builder = PrometheusBuilder::new()
                .set_buckets(LATENCY)
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let handle = match builder.install_recorder() {
                Ok(handle) => handle,
                Err(error) => {
                    // Another recorder owns the facade: render from a
                    // detached one (empty) rather than fail the server.
                    tracing::warn!(%error, "metrics recorder not installed");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            };
            engine::metrics::describe();
            // Histograms keep their samples until upkeep folds them in:
            // without it, memory grows with every request.
            let upkeep = handle.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(std::time::Duration::from_secs(5));
                loop {
                    every.tick().await;
                    upkeep.run_upkeep();
                }
            });
            handle
        })
        .clone()
}

/// `GET /metrics`.
pub async fn scrape(State(state): State<ServerState>, headers: HeaderMap) -> Response {
    let Some(token) = state.settings.metrics.token.as_ref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let offered = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    // Compare digests: equal length, so the comparison leaks no prefix.
    if Sha256::digest(offered.as_bytes()) != Sha256::digest(token.expose_secret().as_bytes()) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
        )
            .into_response();
    }
    let app = &state.services;
    engine::metrics::db_pool(
        app.pool.num_idle(),
        (app.pool.size() as usize).saturating_sub(app.pool.num_idle()),
    );
    engine::metrics::redis_up(app.redis.ping().await.is_ok());
    match engine::webhooks::relay::backlog(&app.pool).await {
        Ok((outbox, dead)) => engine::metrics::backlog(outbox, dead),
        Err(error) => tracing::warn!(error = format!("{error:#}"), "reading the backlog"),
    }
    match engine::mail::backlog(&app.pool).await {
        Ok((pending, dead)) => engine::metrics::mail_backlog(pending, dead),
        Err(error) => tracing::warn!(error = format!("{error:#}"), "reading the mail backlog"),
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        handle().render(),
    )
        .into_response()
}

/// Counts every request by its route pattern (never the raw path, which
/// holds ids) and status, with its latency.
pub async fn track(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    // A closed set: made-up methods must not mint new series.
    let method = match *request.method() {
        axum::http::Method::GET => "GET",
        axum::http::Method::POST => "POST",
        axum::http::Method::HEAD => "HEAD",
        axum::http::Method::PUT => "PUT",
        axum::http::Method::DELETE => "DELETE",
        axum::http::Method::PATCH => "PATCH",
        axum::http::Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
    .to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    engine::metrics::http_request(route, method, response.status().as_u16(), started.elapsed());
    response
}
