//! Every request has a deadline (`server.request_timeout_secs`): a request
//! still unanswered by then is a 503 answer and a log line, not a client
//! left waiting on a stuck dependency while its connection and task pile
//! up.
//!
//! The deadline covers the time until the answer starts; a streamed body
//! (a CSV, a video) flows on as long as it takes. Two kinds of request are
//! exempt, being long by design and bounded otherwise: uploads (their body
//! is read by the handler, so a large file on a slow line would look stuck;
//! `storage.max_upload_bytes` bounds them) and the console's issuing of a
//! batch (up to 100,000 codes in one transaction, whose progress the page
//! shows; the batch's size bounds it).
//! Dropping a handler at its deadline rolls back its open transaction; the
//! settlement has its own, shorter timeouts inside.

use std::time::Duration;

use axum::{
    extract::{Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse as _, Response},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;

/// Whether `request` is long by design and bounded by its size instead: an
/// upload, or the console issuing a batch.
fn is_exempt(request: &Request) -> bool {
    let path = request.uri().path();
    request.method() == Method::POST
        && ((path.starts_with("/api/v1/shares/") && path.ends_with("/resources"))
            || (path.starts_with("/admin/t/") && path.ends_with("/upload"))
            || path == "/api/admin/codes/issue")
}

pub async fn deadline(State(limit): State<Duration>, request: Request, next: Next) -> Response {
    if is_exempt(&request) {
        return next.run(request).await;
    }
    let json = crate::middleware::panic::wants_json(&request);
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::error!(
                %method,
                %path,
                deadline_secs = limit.as_secs_f64(),
                "a request outlived its deadline; answered 503"
            );
            engine::metrics::request_timed_out();
            if json {
                ApiError::new(
                    ErrorKind::Unavailable,
                    "timeout",
                    "the request took too long; please try again in a moment",
                )
                .into_response()
            } else {
                let mut page = (StatusCode::SERVICE_UNAVAILABLE, Html(PAGE)).into_response();
                page.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from_static("2"),
                );
                page
            }
        }
    }
}

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Taking too long · 响应超时</title></head>
<body><main><h1>This is taking too long</h1>
<p>Nothing is lost: please try again in a moment. <a href="/">Home</a></p>
<h1 lang="zh-CN">响应超时</h1>
<p lang="zh-CN">没有数据丢失，请稍后再试。<a href="/">首页</a></p>
<h1 lang="zh-TW">回應逾時</h1>
<p lang="zh-TW">沒有資料遺失，請稍後再試。<a href="/">首頁</a></p></main></body></html>
"#;

#[cfg(test)]
mod tests {
    use axum::{Router, body::Body, http::header, routing::get, routing::post};
    use tower::ServiceExt as _;

    use super::*;

    async fn slow() -> &'static str {
        tokio::time::sleep(Duration::from_millis(400)).await;
        "late"
    }

    fn app() -> Router {
        Router::new()
            .route("/api/v1/slow", get(slow))
            .route("/page", get(slow))
            .route("/api/v1/shares/x/resources", post(slow))
            .route("/api/admin/codes/issue", post(slow))
            .route("/fine", get(|| async { "fine" }))
            .layer(axum::middleware::from_fn_with_state(
                Duration::from_millis(50),
                deadline,
            ))
    }

    async fn call(method: Method, path: &str, accept: &str) -> (StatusCode, String) {
        let response = app()
            .oneshot(
                Request::builder()
                    .method(method)
                    .uri(path)
                    .header(header::ACCEPT, accept)
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("an answer");
        let status = response.status();
        let kind = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        (status, kind)
    }

    #[tokio::test]
    async fn a_request_past_its_deadline_is_a_503_in_its_callers_language() {
        assert_eq!(
            call(Method::GET, "/api/v1/slow", "*/*").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "application/problem+json".to_owned()
            )
        );
        let (status, kind) = call(Method::GET, "/page", "text/html").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(kind.starts_with("text/html"), "{kind}");
        assert_eq!(
            call(Method::GET, "/fine", "*/*").await.0,
            StatusCode::OK,
            "answers in time pass"
        );
    }

    #[tokio::test]
    async fn uploads_and_issuing_are_bounded_by_their_size_not_the_deadline() {
        for path in ["/api/v1/shares/x/resources", "/api/admin/codes/issue"] {
            assert_eq!(
                call(Method::POST, path, "*/*").await.0,
                StatusCode::OK,
                "{path}"
            );
        }
    }
}
