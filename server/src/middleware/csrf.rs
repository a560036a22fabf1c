//! Cross-site request forgery defence.
//!
//! Two layers, no tokens to thread through every form:
//! 1. the session cookie is `SameSite=Lax`, so browsers do not attach it to
//!    cross-site POSTs at all;
//! 2. this middleware refuses any state-changing request (every method but
//!    GET/HEAD/OPTIONS/TRACE) whose `Origin` (or, failing that, `Referer`)
//!    is not this site: one of the server's own origins
//!    ([`super::hosts::Hosts::origins`]: the public origin, the hosts an
//!    operator allows, the loopback names), never whatever a request's
//!    `Host` claims (a rebound name would make any page "this site").
//!
//! Browsers always send `Origin` on cross-origin POSTs (and on same-origin
//! ones too, in current Chromium and Firefox), so a forged request from
//! another site cannot omit it. A request with neither header is a
//! non-browser client (curl, API tools, tests), which a hostile page cannot
//! drive with the victim's cookies; it passes.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::{HeaderMap, Method, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;

/// The origins a state-changing request may come from (lower case).
#[derive(Clone, Debug)]
pub struct SameOrigin {
    pub origins: Arc<[String]>,
}

pub async fn same_origin(
    State(policy): State<SameOrigin>,
    request: Request,
    next: Next,
) -> Response {
    if is_safe(request.method()) || origin_allowed(&policy, request.headers()) {
        return next.run(request).await;
    }
    tracing::warn!(
        origin = ?request.headers().get(header::ORIGIN),
        referer = ?request.headers().get(header::REFERER),
        "refused a cross-site request"
    );
    ApiError::new(
        ErrorKind::Forbidden,
        "cross_site_request",
        "This request came from another site and was refused. Reload the page and try again.",
    )
    .into_response()
}

fn is_safe(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

fn origin_allowed(policy: &SameOrigin, headers: &HeaderMap) -> bool {
    let claimed = match headers.get(header::ORIGIN) {
        Some(origin) => origin.to_str().ok().map(str::to_owned),
        None => match headers.get(header::REFERER) {
            Some(referer) => referer.to_str().ok().and_then(origin_of),
            None => return true,
        },
    };
    let Some(claimed) = claimed else { return false };
    let claimed = claimed.to_ascii_lowercase();
    policy.origins.contains(&claimed)
}

/// `scheme://authority` of a URL, if it has one.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    (!authority.is_empty()).then(|| format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn policy() -> SameOrigin {
        let hosts = super::super::hosts::Hosts::new("https://courses.example.com", &[], 3000);
        SameOrigin {
            origins: hosts.origins().into(),
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).expect("header"));
        }
        map
    }

    #[test]
    fn same_site_requests_pass() {
        let p = policy();
        assert!(origin_allowed(
            &p,
            &headers(&[(header::ORIGIN, "https://courses.example.com")])
        ));
        assert!(origin_allowed(
            &p,
            &headers(&[
                (header::ORIGIN, "http://127.0.0.1:3000"),
                (header::HOST, "127.0.0.1:3000")
            ])
        ));
        assert!(origin_allowed(
            &p,
            &headers(&[
                (header::REFERER, "http://127.0.0.1:3000/login?x=1"),
                (header::HOST, "127.0.0.1:3000")
            ])
        ));
        assert!(
            origin_allowed(&p, &headers(&[])),
            "non-browser clients send neither header"
        );
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let p = policy();
        for h in [
            headers(&[
                (header::ORIGIN, "https://evil.example"),
                (header::HOST, "127.0.0.1:3000"),
            ]),
            headers(&[(header::ORIGIN, "null"), (header::HOST, "127.0.0.1:3000")]),
            headers(&[
                (header::REFERER, "https://evil.example/x"),
                (header::HOST, "127.0.0.1:3000"),
            ]),
            headers(&[
                (header::ORIGIN, "http://127.0.0.1:3000.evil.example"),
                (header::HOST, "127.0.0.1:3000"),
            ]),
            headers(&[(header::ORIGIN, "https://evil.example")]),
            // The host a rebound page names: never an origin of its own.
            headers(&[
                (header::ORIGIN, "http://rebind.example:3000"),
                (header::HOST, "rebind.example:3000"),
            ]),
        ] {
            assert!(!origin_allowed(&p, &h), "{h:?} must be refused");
        }
    }

    #[test]
    fn only_unsafe_methods_are_checked() {
        assert!(is_safe(&Method::GET));
        assert!(!is_safe(&Method::POST));
        assert!(!is_safe(&Method::DELETE));
    }
}
