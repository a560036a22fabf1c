//! A panic while a request is being answered is a 500 answer, a log line
//! and a metric, not a dropped connection.
//!
//! Without this, a handler that panics takes its connection with it: the
//! client sees a reset (a load balancer may retry a non-idempotent request
//! elsewhere) and the request log shows no answer. The middleware is the
//! innermost layer around the router, so the answer still gets every
//! standard header (request id, security headers, `no-store`) and the log
//! line names the request; the panic message goes only to the log. The
//! answer is the problem document a JSON API client parses (`internal`),
//! the `AppError` a page's script reads from a server function
//! (`crate::middleware::server_fn_errors`), or a small page for a person (a plain form
//! post included). What it cannot catch: a panic after the answer has
//! started (inside a streamed body), which still ends that connection.

use std::{any::Any, panic::AssertUnwindSafe};

use axum::{
    extract::Request,
    http::{StatusCode, header},
    middleware::Next,
    response::{Html, IntoResponse as _, Response},
};
use engine::outcome::ErrorKind;
use futures::FutureExt as _;

use crate::problem::ApiError;

/// Whether the caller reads JSON (an `/api` path, or `Accept` says so)
/// rather than a page. A plain form post to a server function (no
/// JavaScript) reads a page.
pub fn wants_json(request: &Request) -> bool {
    let path = request.uri().path();
    let plain_form = crate::middleware::server_fn_errors::is_server_fn(path)
        && crate::middleware::server_fn_errors::is_plain_form(request.headers());
    (path.starts_with("/api/") && !plain_form)
        || request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|accept| accept.contains("application/json"))
}

pub async fn catch_panic(request: Request, next: Next) -> Response {
    let json = wants_json(&request);
    // A page's script (a plain form post reads the page).
    let server_fn = crate::middleware::server_fn_errors::is_server_fn(request.uri().path())
        && !crate::middleware::server_fn_errors::is_plain_form(request.headers());
    match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            // The reference a person is shown is on the panic's own line.
            let reference = crate::middleware::server_fn_errors::new_reference();
            tracing::error!(panic = message(&*panic), %reference, "a request panicked; answered 500");
            engine::metrics::request_panicked();
            let error = ApiError::new(
                ErrorKind::Internal,
                "internal",
                "something went wrong on our side",
            );
            if server_fn {
                // Also when the panic was in a layer outside the one that
                // translates (`crate::middleware::server_fn_errors`).
                crate::middleware::server_fn_errors::answer(error, Some(reference))
            } else if json {
                error.into_response()
            } else {
                (StatusCode::INTERNAL_SERVER_ERROR, Html(PAGE)).into_response()
            }
        }
    }
}

/// What a panic said, for the log.
fn message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

/// The page a person sees, in every language (which one the visitor chose
/// is not known past a panic).
const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Something went wrong · 出错了</title></head>
<body><main><h1>Something went wrong on our side</h1>
<p>Please try again in a moment. <a href="/">Home</a></p>
<h1 lang="zh-CN">服务器出错了</h1>
<p lang="zh-CN">请稍后再试。<a href="/">首页</a></p>
<h1 lang="zh-TW">伺服器出錯了</h1>
<p lang="zh-TW">請稍後再試。<a href="/">首頁</a></p></main></body></html>
"#;

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, routing::get};
    use tower::ServiceExt as _;

    use super::*;

    async fn api_boom() -> &'static str {
        panic!("api handler broke")
    }

    async fn page_boom() -> &'static str {
        std::panic::panic_any(String::from("page handler broke"))
    }

    fn app() -> Router {
        Router::new()
            .route("/api/v1/boom", get(api_boom))
            .route("/api/auth/boom", get(api_boom))
            .route("/page", get(page_boom))
            .route("/fine", get(|| async { "fine" }))
            .layer(axum::middleware::from_fn(catch_panic))
    }

    async fn call(path: &str, accept: &str) -> (StatusCode, String, String) {
        let response = app()
            .oneshot(
                Request::get(path)
                    .header(header::ACCEPT, accept)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("an answer, not a dropped connection");
        let status = response.status();
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        (
            status,
            kind,
            String::from_utf8(body.to_vec()).expect("utf-8"),
        )
    }

    /// A page's script reads an `AppError` with a reference; a plain form
    /// post (no JavaScript) reads a page.
    #[tokio::test]
    async fn a_panicking_server_function_answers_what_its_caller_reads() {
        let (status, kind, body) = call("/api/auth/boom", "application/json").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(kind, "application/json");
        let reference = |body: &str| match serde_json::from_str(body).expect("an AppError") {
            app::error::AppError::Internal { reference } => reference,
            other => panic!("{other:?}"),
        };
        let first = reference(&body);
        assert!(
            first.len() == 8 && first != "internal" && first.chars().all(|c| c.is_ascii_hexdigit()),
            "a reference of its own: {first}"
        );
        let (_, _, again) = call("/api/auth/boom", "application/json").await;
        assert_ne!(reference(&again), first, "one reference per fault");
        assert!(
            !body.contains("broke"),
            "the panic stays in the log: {body}"
        );
        let (status, kind, body) = call("/api/auth/boom", "text/html,*/*;q=0.8").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(kind.starts_with("text/html"), "{kind}");
        assert!(body.contains("Something went wrong"), "{body}");
    }

    #[tokio::test]
    async fn a_panicking_api_handler_answers_the_internal_error() {
        let (status, kind, body) = call("/api/v1/boom", "*/*").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(kind, "application/problem+json");
        let body: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(body["code"], "internal");
        assert_eq!(body["status"], 500);
        assert!(
            !body.to_string().contains("broke"),
            "the panic stays in the log: {body}"
        );
    }

    #[tokio::test]
    async fn a_panicking_page_answers_a_page_in_both_languages() {
        let (status, kind, body) = call("/page", "text/html").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(kind.starts_with("text/html"), "{kind}");
        assert!(body.contains("Something went wrong on our side"), "{body}");
        assert!(body.contains("服务器出错了"), "{body}");
        assert!(!body.contains("broke"), "{body}");
        // A client asking for JSON gets a problem document anywhere.
        let (_, kind, _) = call("/page", "application/json").await;
        assert_eq!(kind, "application/problem+json");
    }

    #[tokio::test]
    async fn answers_without_a_panic_pass_untouched() {
        assert_eq!(
            call("/fine", "*/*").await,
            (
                StatusCode::OK,
                "text/plain; charset=utf-8".to_owned(),
                "fine".to_owned()
            )
        );
    }

    #[test]
    fn the_log_gets_the_panics_message() {
        assert_eq!(message(&"static"), "static");
        assert_eq!(message(&String::from("owned")), "owned");
        assert_eq!(message(&42_u8), "(not a string)");
    }
}
