//! A server function's caller (a page's wasm) reads every error answer as
//! an [`AppError`] (`app::error`); a body it cannot decode reaches the
//! person as a decoding error where a sentence should be. So every error
//! answer a page's script gets from a server function's path is one,
//! whoever made it:
//!
//! - The layers around the handlers answer the JSON API's problem
//!   ([`ApiError`]) for every `/api/` path: a request past its deadline, a
//!   session store outage, a cross-site request, a panic in a handler
//!   (`crate::middleware::panic`; a panic in a layer outside this one is answered
//!   through [`answer`] by the outer catcher). An `ApiError` travels with
//!   its response (an extension), and here, on a server function's path,
//!   becomes the `AppError` of its kind ([`AppError::from_problem`]), with
//!   the same status and headers (`Retry-After`).
//!
//! The errors a server function itself answers (its own, and the
//! arguments `server_fn` could not read: `AppError::Invalid`) carry their
//! status already: `app::error::AppError::set_response_status` sets it as
//! the error is encoded.
//!
//! A plain form post (no JavaScript: it accepts `text/html`) is left alone:
//! the deadline and the panic catcher answer it a page (`crate::middleware::panic::
//! wants_json`), and a problem document's `detail` is a sentence too.
//! Every other response passes untouched.

use app::error::{AppError, Problem};
use axum::{
    extract::Request,
    http::{HeaderMap, HeaderValue, header},
    middleware::Next,
    response::{IntoResponse as _, Response},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;

/// Whether `path` is a server function's: the pages' `/api/…`, not the
/// JSON API's `/api/v1…`.
pub fn is_server_fn(path: &str) -> bool {
    path.strip_prefix("/api/")
        .is_some_and(|rest| rest.split('/').next() != Some("v1"))
}

/// Whether the request is a plain form post (no JavaScript), which reads
/// pages rather than errors.
pub fn is_plain_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"))
}

pub async fn server_fn_errors(request: Request, next: Next) -> Response {
    if !is_server_fn(request.uri().path()) || is_plain_form(request.headers()) {
        return next.run(request).await;
    }
    let mut response = next.run(request).await;
    if let Some(error) = response.extensions_mut().remove::<ApiError>() {
        let (mut parts, _) = response.into_parts();
        let translated = answer(error, None);
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return Response::from_parts(parts, translated.into_body());
    }
    response
}

/// A fault's reference: what a person quotes and the log line carries.
pub fn new_reference() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_owned()
}

/// `error` as a server function's caller reads it: the `AppError` of its
/// kind, with its status and `Retry-After`. A fault carries `reference`
/// (logged by the caller with what went wrong), or one made and logged
/// here (inside the request's span, which names the request).
pub fn answer(error: ApiError, reference: Option<String>) -> Response {
    let status = error.status();
    let retry_after = error.retry_after;
    let code = error.code.clone().into_owned();
    let mut problem = Problem {
        kind: error.kind,
        code: error.code.into_owned(),
        message: error.message,
        field: error.field,
        retry_after_secs: error.retry_after,
        limit: error.rate_limit,
    };
    if error.kind == ErrorKind::Internal {
        problem.code = reference.unwrap_or_else(|| {
            let reference = new_reference();
            tracing::error!(%reference, %code, "a server function's caller was answered a fault");
            reference
        });
    }
    let body = serde_json::to_string(&AppError::from_problem(problem))
        .unwrap_or_else(|_| String::from("{}"));
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::is_server_fn;

    #[test]
    fn server_functions_are_the_pages_api_paths_and_not_the_json_api() {
        for path in [
            "/api/auth/login",
            "/api/admin/codes/issue",
            "/api/v2/x",
            "/api/v10",
        ] {
            assert!(is_server_fn(path), "{path}");
        }
        for path in [
            "/api/v1",
            "/api/v1/",
            "/api/v1/shares",
            "/apix",
            "/s/x",
            "/api",
        ] {
            assert!(!is_server_fn(path), "{path}");
        }
    }
}
