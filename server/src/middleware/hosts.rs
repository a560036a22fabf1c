//! The names this server answers for.
//!
//! A browser sends the name it asked for as `Host`. A page on another site
//! whose name the attacker re-resolves to this server's address (DNS
//! rebinding) reaches the server with the *attacker's* name in `Host`, and
//! with the attacker's own origin, which is then "same-origin" to the
//! browser: without this check it could read a development server's mail
//! (reset links) and act on it. So a request is answered only when its
//! `Host` is one of the server's own names: `server.public_url`'s host,
//! the hosts an operator lists in `server.allowed_hosts`, and the loopback
//! names (`127.0.0.1`, `localhost`, `[::1]`) on the port the server listens
//! on, which a rebound page can never send. Anything else is 400
//! `unknown_host` before any route or session is touched.
//!
//! The health and metrics endpoints answer whatever the name: load
//! balancers and scrapers call them by address, and they hold nothing a
//! page could use. The same list is the origins CSRF accepts
//! ([`Hosts::origins`]): never whatever `Host` a request claims.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};
use engine::outcome::ErrorKind;

use crate::problem::ApiError;

/// The paths that answer by any name.
const ANY_NAME: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// The authorities (`host[:port]`, lower case, without a default port)
/// this server answers for, and its public origin.
#[derive(Clone, Debug)]
pub struct Hosts {
    authorities: Arc<[String]>,
    public_origin: Arc<str>,
}

impl Hosts {
    /// `public_origin` (`scheme://host[:port]`), the operator's extra
    /// `allowed` hosts, and the loopback names on `port`.
    pub fn new(public_origin: &str, allowed: &[String], port: u16) -> Self {
        let mut authorities: Vec<String> = Vec::new();
        let mut add = |authority: &str| {
            let authority = normalise(authority);
            if !authority.is_empty() && !authorities.contains(&authority) {
                authorities.push(authority);
            }
        };
        if let Some((_, authority)) = public_origin.split_once("://") {
            add(authority);
        }
        for host in allowed {
            add(host);
        }
        for loopback in ["127.0.0.1", "localhost", "[::1]"] {
            add(&format!("{loopback}:{port}"));
        }
        Self {
            authorities: authorities.into(),
            public_origin: Arc::from(public_origin.trim_end_matches('/')),
        }
    }

    /// Whether `host` (a `Host` header) names this server.
    pub fn knows(&self, host: &str) -> bool {
        let host = normalise(host);
        self.authorities.contains(&host)
    }

    /// The origins a state-changing request may come from: the public
    /// origin, and each known name by `http` and `https`.
    pub fn origins(&self) -> Vec<String> {
        let mut origins = vec![self.public_origin.to_ascii_lowercase()];
        for authority in self.authorities.iter() {
            for scheme in ["http", "https"] {
                origins.push(format!("{scheme}://{authority}"));
            }
        }
        origins
    }
}

/// `host[:port]` in lower case, without a trailing dot on the name and
/// without the default ports (a browser leaves them out).
fn normalise(authority: &str) -> String {
    let authority = authority.trim().to_ascii_lowercase();
    let authority = authority
        .strip_suffix(":80")
        .or_else(|| authority.strip_suffix(":443"))
        .unwrap_or(&authority);
    // An IPv6 literal keeps its brackets; a name may end in a dot.
    let (name, port) = match authority.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (!name.starts_with('[') || name.ends_with(']')) =>
        {
            (name, Some(port))
        }
        _ => (authority, None),
    };
    let name = name.trim_end_matches('.');
    match port {
        Some(port) => format!("{name}:{port}"),
        None => name.to_owned(),
    }
}

pub async fn known_host(State(hosts): State<Hosts>, request: Request, next: Next) -> Response {
    if ANY_NAME.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
    if host.as_deref().is_some_and(|host| hosts.knows(host)) {
        return next.run(request).await;
    }
    tracing::warn!(host = ?host, "refused a request for a name this server does not serve");
    ApiError::new(
        ErrorKind::Malformed,
        "unknown_host",
        "This server does not answer for that name (its names: server.public_url, server.allowed_hosts).",
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Hosts {
        Hosts::new(
            "https://courses.example.com",
            &["Admin.Example.com:8443".to_owned()],
            3000,
        )
    }

    #[test]
    fn its_own_names_are_known_and_no_other() {
        let hosts = hosts();
        for own in [
            "courses.example.com",
            "COURSES.example.com",
            "courses.example.com.",
            "courses.example.com:443",
            "admin.example.com:8443",
            "127.0.0.1:3000",
            "localhost:3000",
            "[::1]:3000",
        ] {
            assert!(hosts.knows(own), "{own}");
        }
        for other in [
            "rebind.example:3000",
            "courses.example.com.evil.example",
            "courses.example.com:8443",
            "admin.example.com",
            "127.0.0.1:3001",
            "localhost",
            "",
        ] {
            assert!(!hosts.knows(other), "{other}");
        }
    }

    #[test]
    fn the_origins_are_its_names_and_never_a_claimed_host() {
        let origins = hosts().origins();
        assert!(origins.contains(&"https://courses.example.com".to_owned()));
        assert!(origins.contains(&"http://127.0.0.1:3000".to_owned()));
        assert!(origins.contains(&"https://admin.example.com:8443".to_owned()));
        assert!(!origins.iter().any(|o| o.contains("rebind")));
    }
}
