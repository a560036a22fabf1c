//! Bad input to a server function is the caller's error, never a 5xx.
//!
//! `server_fn` rejects arguments it cannot deserialize (a malformed uuid, a
//! missing field) before our code runs, and answers 500 with the error it
//! made: `AppError::Invalid` (see `FromServerFnError` in `app::error`).
//! This layer gives those answers the status of their kind, 422. Every
//! other response passes untouched.

use axum::{
    body::{Body, to_bytes},
    extract::Request,
    http::StatusCode,
    middleware::Next,
    response::Response,
};

/// Error bodies of server functions are small; anything larger is left alone.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub async fn server_fn_status(request: Request, next: Next) -> Response {
    let server_fn = {
        let path = request.uri().path();
        path.starts_with("/api/") && !path.starts_with("/api/v1/")
    };
    let response = next.run(request).await;
    if !server_fn || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    if let Ok(app::error::AppError::Invalid { .. }) = serde_json::from_slice(&bytes) {
        parts.status = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Response::from_parts(parts, Body::from(bytes))
}
