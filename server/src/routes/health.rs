//! `/healthz` (the process is up) and `/readyz` (its dependencies answer,
//! and it is not shutting down).

use std::time::Duration;

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse};
use serde_json::json;

use crate::state::ServerState;

/// Bound on each dependency check of `/readyz`.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

pub async fn healthz() -> impl IntoResponse {
    Json(json!({ "status": "ok" }))
}

pub async fn readyz(State(state): State<ServerState>) -> impl IntoResponse {
    // Shutting down: out of rotation first, whatever the dependencies say.
    if state.draining.load(std::sync::atomic::Ordering::SeqCst) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "status": "draining" })),
        );
    }
    let report = engine::health::check(
        &state.services.pool,
        &state.services.redis,
        READINESS_TIMEOUT,
    )
    .await;
    let status = if report.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if report.is_ready() { "ready" } else { "unavailable" },
        "postgres": report.postgres,
        "redis": report.redis,
        "down": report.down(),
    });
    (status, Json(body))
}
