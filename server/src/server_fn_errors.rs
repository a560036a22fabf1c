//! A server function's caller (a page's wasm) reads every error answer as
//! an [`AppError`] (`app::error`); a body it cannot decode reaches the
//! person as a decoding error where a sentence should be. So every error
//! answer on a server function's path is one, whoever made it:
//!
//! - The layers around the handlers answer the JSON API's problem
//!   ([`ApiError`]) for every `/api/` path: a request past its deadline, a
//!   panic, a session store outage, a cross-site request. An `ApiError`
//!   travels with its response (an extension), and here, on a server
//!   function's path, becomes the `AppError` of its kind, with the same
//!   status and headers (`Retry-After`).
//! - `server_fn` rejects arguments it cannot deserialize (a malformed uuid,
//!   a missing field) before our code runs, and answers 500 with the error
//!   it made: `AppError::Invalid` (see `FromServerFnError` in
//!   `app::error`). Bad input is the caller's error, never a 5xx: those
//!   answers get the status of their kind, 422.
//!
//! Every other response passes untouched.

use app::error::AppError;
use axum::{
    body::{Body, to_bytes},
    extract::Request,
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::Response,
};
use engine::outcome::ErrorKind;

use crate::routes::api::error::ApiError;

/// Error bodies of server functions are small; anything larger is left alone.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Whether `path` is a server function's (the pages' `/api/…`, not the
/// JSON API's `/api/v1/…`).
pub fn is_server_fn(path: &str) -> bool {
    path.starts_with("/api/") && !path.starts_with("/api/v1/")
}

pub async fn server_fn_errors(request: Request, next: Next) -> Response {
    if !is_server_fn(request.uri().path()) {
        return next.run(request).await;
    }
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut response = next.run(request).await;
    if let Some(error) = response.extensions_mut().remove::<ApiError>() {
        let (mut parts, _) = response.into_parts();
        let body = serde_json::to_string(&as_app_error(error, request_id))
            .unwrap_or_else(|_| String::from("{}"));
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::from(body));
    }
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    if let Ok(AppError::Invalid { .. }) = serde_json::from_slice(&bytes) {
        parts.status = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The `AppError` a page shows for a problem the JSON API would answer:
/// the same kind, its code as the refusal's reason, a fault's reference
/// being the request's id (the log's lines carry it).
fn as_app_error(error: ApiError, request_id: Option<String>) -> AppError {
    let retry_after_secs = error.retry_after.unwrap_or(1);
    match error.kind {
        ErrorKind::Unavailable => AppError::Unavailable { retry_after_secs },
        ErrorKind::Busy => AppError::TryAgain {
            kind: ErrorKind::Busy,
            message: error.message,
            retry_after_secs,
        },
        ErrorKind::RateLimited => AppError::RateLimited {
            message: error.message,
            limit: error.rate_limit.unwrap_or(0),
            retry_after_secs,
        },
        ErrorKind::Internal => AppError::Internal {
            reference: request_id.unwrap_or_else(|| error.code.into_owned()),
        },
        ErrorKind::Unauthenticated => AppError::Unauthenticated,
        ErrorKind::NotFound => AppError::NotFound,
        ErrorKind::Invalid | ErrorKind::Malformed => AppError::Invalid {
            field: error.field,
            message: error.message,
        },
        kind @ (ErrorKind::MethodNotAllowed
        | ErrorKind::Forbidden
        | ErrorKind::Conflict
        | ErrorKind::Gone
        | ErrorKind::TooLarge) => AppError::Refused {
            kind,
            reason: error.code.into_owned(),
            message: error.message,
            field: error.field,
        },
    }
}
